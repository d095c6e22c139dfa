#ifndef HANDOFF_CAVAHI_SHIM_H
#define HANDOFF_CAVAHI_SHIM_H
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/defs.h>
#include <avahi-common/domain.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/timeval.h>

/* AvahiPoll is a table of function pointers; this calls its timeout_new. */
static inline AvahiTimeout *handoff_avahi_timeout_new(const AvahiPoll *poll, const struct timeval *when,
                                                      AvahiTimeoutCallback callback, void *userdata) {
    return poll->timeout_new(poll, when, callback, userdata);
}

static inline void handoff_avahi_timeout_free(const AvahiPoll *poll, AvahiTimeout *timeout) {
    poll->timeout_free(timeout);
}
#endif
