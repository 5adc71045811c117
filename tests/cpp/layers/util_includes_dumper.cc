// Compiled by the CoreLayers test against util's view of src/core: util may use no other folder, so
// this upward include must not be found (CMakeLists.txt, OPDUMP_CORE_LAYERS).
#include "dumper/dumper.h"
