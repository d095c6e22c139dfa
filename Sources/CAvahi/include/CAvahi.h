#ifndef HANDOFF_CAVAHI_H
#define HANDOFF_CAVAHI_H
/* avahi-client, loaded by handoffd when it starts mDNS (dlopen) rather than linked: every other
 * program of ours is the same executable, and linking would load libavahi-client, libavahi-common
 * and libdbus-1 into each of them (about 240 KiB resident in handoff-notify) for nothing.
 * Call handoff_avahi_load() once before any handoff_avahi_* function; each of those calls the
 * library's function of the same name without the prefix. */
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

/* NULL once both libraries and every function are loaded, else what the loader said
 * (the same answer on every call: it loads once). */
const char *handoff_avahi_load(void);

AvahiClient *handoff_avahi_client_new(const AvahiPoll *poll, AvahiClientFlags flags, AvahiClientCallback callback,
                                      void *userdata, int *error);
void handoff_avahi_client_free(AvahiClient *client);
int handoff_avahi_client_errno(AvahiClient *client);
AvahiClientState handoff_avahi_client_get_state(AvahiClient *client);
const char *handoff_avahi_client_get_domain_name(AvahiClient *client);
const char *handoff_avahi_client_get_host_name_fqdn(AvahiClient *client);
AvahiEntryGroup *handoff_avahi_entry_group_new(AvahiClient *client, AvahiEntryGroupCallback callback, void *userdata);
int handoff_avahi_entry_group_free(AvahiEntryGroup *group);
int handoff_avahi_entry_group_commit(AvahiEntryGroup *group);
int handoff_avahi_entry_group_add_record(AvahiEntryGroup *group, AvahiIfIndex interface, AvahiProtocol protocol,
                                         AvahiPublishFlags flags, const char *name, uint16_t clazz, uint16_t type,
                                         uint32_t ttl, const void *rdata, size_t size);
AvahiServiceBrowser *handoff_avahi_service_browser_new(AvahiClient *client, AvahiIfIndex interface, AvahiProtocol protocol,
                                                       const char *type, const char *domain, AvahiLookupFlags flags,
                                                       AvahiServiceBrowserCallback callback, void *userdata);
AvahiServiceResolver *handoff_avahi_service_resolver_new(AvahiClient *client, AvahiIfIndex interface, AvahiProtocol protocol,
                                                         const char *name, const char *type, const char *domain,
                                                         AvahiProtocol aprotocol, AvahiLookupFlags flags,
                                                         AvahiServiceResolverCallback callback, void *userdata);
int handoff_avahi_service_resolver_free(AvahiServiceResolver *resolver);
const char *handoff_avahi_strerror(int error);
struct timeval *handoff_avahi_elapse_time(struct timeval *tv, unsigned msec, unsigned jitter);
int handoff_avahi_service_name_join(char *p, size_t size, const char *name, const char *type, const char *domain);
char *handoff_avahi_alternative_service_name(const char *s);
void handoff_avahi_free(void *p);
char *handoff_avahi_address_snprint(char *buffer, size_t length, const AvahiAddress *address);
AvahiStringList *handoff_avahi_string_list_get_next(AvahiStringList *list);
uint8_t *handoff_avahi_string_list_get_text(AvahiStringList *list);
size_t handoff_avahi_string_list_get_size(AvahiStringList *list);

/* AvahiPoll is a table of function pointers; this calls its timeout_new. */
static inline AvahiTimeout *handoff_avahi_timeout_new(const AvahiPoll *poll, const struct timeval *when,
                                                      AvahiTimeoutCallback callback, void *userdata) {
    return poll->timeout_new(poll, when, callback, userdata);
}

static inline void handoff_avahi_timeout_free(const AvahiPoll *poll, AvahiTimeout *timeout) {
    poll->timeout_free(timeout);
}
#endif
