// The module needs one C file; the functions are inline in include/CCallgrind.h.
#include "CCallgrind.h"
