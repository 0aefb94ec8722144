// RingIO — throughput comparison: no code; the module exists for its header (include/CEpoll.h).
#include "CEpoll.h"
