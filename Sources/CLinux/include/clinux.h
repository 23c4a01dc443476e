// The Linux interfaces that Swift's Glibc module leaves out: epoll, eventfd and accept4.
// Swift calls them directly; this header only makes them visible.
#ifndef CLINUX_H
#define CLINUX_H

#include <sys/epoll.h>
#include <sys/eventfd.h>

/// accept4(fd, NULL, NULL, flags): glibc declares accept4 only under _GNU_SOURCE, which a
/// header of a Swift module cannot turn on for the system headers it shares with Glibc.
int clinux_accept4(int fd, int flags);

#endif
