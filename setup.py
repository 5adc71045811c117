"""Builds the opdump wheel with CMake: the libraries, the native module and the CLI go inside the
package (opdump/lib, opdump/bin), found relative to it, so the package works from any site-packages.

Environment: OPDUMP_CMAKE_ARGS adds CMake arguments; OPDUMP_PIP_BUILD_DIR is where the build goes
(default build-pip/ in the checkout, reused between installs: CMake in cmake/, the staged install in
stage/, setuptools in setuptools/); CMAKE_BUILD_PARALLEL_LEVEL the jobs."""
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("OPDUMP_PIP_BUILD_DIR") or os.path.join(ROOT, "build-pip"))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(opdump VERSION ([0-9.]+)", f.read()).group(1)


def torch_cmake_prefix():
    """Where the torch this Python imports keeps its CMake config (pip's torch; Debian's is found anyway)."""
    try:
        import torch.utils
        return torch.utils.cmake_prefix_path
    except Exception:  # no torch importable: CMake looks in the system locations
        return None


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        build_dir = os.path.join(BUILD, "cmake")
        stage = os.path.join(BUILD, "stage")
        args = ["-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DOPDUMP_BUILD_TESTS=OFF",
                "-DOPDUMP_BUILD_BENCH=OFF", "-DOPDUMP_BUILD_TORCH=ON", "-DOPDUMP_INSTALL=ON",
                f"-DOPDUMP_PYTHON={sys.executable}", "-DCMAKE_INSTALL_LIBDIR=lib", "-DOPDUMP_INSTALL_PYTHONDIR=python"]
        if shutil.which("ninja") and not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            args += ["-G", "Ninja"]
        prefix = torch_cmake_prefix()
        if prefix:
            args.append(f"-DCMAKE_PREFIX_PATH={prefix}")
        args += shlex.split(os.environ.get("OPDUMP_CMAKE_ARGS", ""))
        subprocess.check_call(["cmake"] + args)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs])
        shutil.rmtree(stage, ignore_errors=True)
        subprocess.check_call(["cmake", "--install", build_dir, "--prefix", stage])
        self.stage_into_package(stage, os.path.join(self.build_lib, "opdump"))

    @staticmethod
    def stage_into_package(stage, package):
        """The installed tree rearranged as the package: module files at the top, the shared libraries
        under lib/ (by their soname: wheels hold no symlinks), the CLI and the replay program under bin/. Native files of an
        earlier build (another Python's module) are removed first."""
        for name in os.listdir(package):
            if name.startswith("_opdump.") and name.endswith(".so"):
                os.remove(os.path.join(package, name))
        for folder in ("lib", "bin"):
            shutil.rmtree(os.path.join(package, folder), ignore_errors=True)
        shutil.copytree(os.path.join(stage, "python", "opdump"), package, dirs_exist_ok=True)
        os.makedirs(os.path.join(package, "lib"), exist_ok=True)
        for name in os.listdir(os.path.join(stage, "lib")):
            path = os.path.join(stage, "lib", name)
            if re.fullmatch(r"lib.*\.so\.\d+\.\d+", name):  # the soname the loader asks for
                shutil.copyfile(os.path.realpath(path), os.path.join(package, "lib", name))
        os.makedirs(os.path.join(package, "bin"), exist_ok=True)
        for program in ("opdump", "opdump_replay"):  # opdump replay runs opdump_replay from beside it
            shutil.copy2(os.path.join(stage, "bin", program), os.path.join(package, "bin", program))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: the package holds native code
        return True


os.makedirs(BUILD, exist_ok=True)
setup(
    version=project_version(),
    packages=["opdump"],
    package_dir={"opdump": "python/opdump"},
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
    options={"build": {"build_base": os.path.join(BUILD, "setuptools")}, "egg_info": {"egg_base": BUILD}},
    zip_safe=False,
)
