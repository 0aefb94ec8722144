// RingIO — throughput comparison: <sys/epoll.h> for the load generator (Swift's Glibc module
// does not include it).
#ifndef RINGIO_CEPOLL_H
#define RINGIO_CEPOLL_H
#include <sys/epoll.h>
#endif
