#include "CAvahi.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* Every function used, by library: X(name). */
#define HANDOFF_AVAHI_CLIENT(X) \
    X(avahi_client_new) X(avahi_client_free) X(avahi_client_errno) X(avahi_client_get_state) \
    X(avahi_client_get_domain_name) X(avahi_client_get_host_name_fqdn) X(avahi_entry_group_new) \
    X(avahi_entry_group_free) X(avahi_entry_group_commit) X(avahi_entry_group_add_record) \
    X(avahi_service_browser_new) X(avahi_service_resolver_new) X(avahi_service_resolver_free)
#define HANDOFF_AVAHI_COMMON(X) \
    X(avahi_strerror) X(avahi_elapse_time) X(avahi_service_name_join) X(avahi_alternative_service_name) \
    X(avahi_free) X(avahi_address_snprint) X(avahi_string_list_get_next) X(avahi_string_list_get_text) \
    X(avahi_string_list_get_size)

/* The pointers take their types from Avahi's own declarations, so a mismatch fails to compile. */
#define HANDOFF_AVAHI_POINTER(name) static __typeof__(name) *loaded_##name;
HANDOFF_AVAHI_CLIENT(HANDOFF_AVAHI_POINTER)
HANDOFF_AVAHI_COMMON(HANDOFF_AVAHI_POINTER)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512];
static const char *outcome = failure;

static int resolve(void *library, const char *name, void **pointer) {
    *pointer = dlsym(library, name);
    if (*pointer != NULL) return 1;
    snprintf(failure, sizeof(failure), "%s", dlerror());
    return 0;
}

static void load(void) {
    /* Kept open for the process's life: the daemon uses it until it exits. */
    void *common = dlopen("libavahi-common.so.3", RTLD_NOW | RTLD_LOCAL);
    void *client = common ? dlopen("libavahi-client.so.3", RTLD_NOW | RTLD_LOCAL) : NULL;
    if (client == NULL) {
        snprintf(failure, sizeof(failure), "%s", dlerror());
        return;
    }
#define HANDOFF_AVAHI_RESOLVE_CLIENT(name) if (!resolve(client, #name, (void **)&loaded_##name)) return;
#define HANDOFF_AVAHI_RESOLVE_COMMON(name) if (!resolve(common, #name, (void **)&loaded_##name)) return;
    HANDOFF_AVAHI_CLIENT(HANDOFF_AVAHI_RESOLVE_CLIENT)
    HANDOFF_AVAHI_COMMON(HANDOFF_AVAHI_RESOLVE_COMMON)
    outcome = NULL;
}

const char *handoff_avahi_load(void) {
    pthread_once(&once, load);
    return outcome;
}

AvahiClient *handoff_avahi_client_new(const AvahiPoll *poll, AvahiClientFlags flags, AvahiClientCallback callback,
                                      void *userdata, int *error) {
    return loaded_avahi_client_new(poll, flags, callback, userdata, error);
}
void handoff_avahi_client_free(AvahiClient *client) { loaded_avahi_client_free(client); }
int handoff_avahi_client_errno(AvahiClient *client) { return loaded_avahi_client_errno(client); }
AvahiClientState handoff_avahi_client_get_state(AvahiClient *client) { return loaded_avahi_client_get_state(client); }
const char *handoff_avahi_client_get_domain_name(AvahiClient *client) { return loaded_avahi_client_get_domain_name(client); }
const char *handoff_avahi_client_get_host_name_fqdn(AvahiClient *client) { return loaded_avahi_client_get_host_name_fqdn(client); }
AvahiEntryGroup *handoff_avahi_entry_group_new(AvahiClient *client, AvahiEntryGroupCallback callback, void *userdata) {
    return loaded_avahi_entry_group_new(client, callback, userdata);
}
int handoff_avahi_entry_group_free(AvahiEntryGroup *group) { return loaded_avahi_entry_group_free(group); }
int handoff_avahi_entry_group_commit(AvahiEntryGroup *group) { return loaded_avahi_entry_group_commit(group); }
int handoff_avahi_entry_group_add_record(AvahiEntryGroup *group, AvahiIfIndex interface, AvahiProtocol protocol,
                                         AvahiPublishFlags flags, const char *name, uint16_t clazz, uint16_t type,
                                         uint32_t ttl, const void *rdata, size_t size) {
    return loaded_avahi_entry_group_add_record(group, interface, protocol, flags, name, clazz, type, ttl, rdata, size);
}
AvahiServiceBrowser *handoff_avahi_service_browser_new(AvahiClient *client, AvahiIfIndex interface, AvahiProtocol protocol,
                                                       const char *type, const char *domain, AvahiLookupFlags flags,
                                                       AvahiServiceBrowserCallback callback, void *userdata) {
    return loaded_avahi_service_browser_new(client, interface, protocol, type, domain, flags, callback, userdata);
}
AvahiServiceResolver *handoff_avahi_service_resolver_new(AvahiClient *client, AvahiIfIndex interface, AvahiProtocol protocol,
                                                         const char *name, const char *type, const char *domain,
                                                         AvahiProtocol aprotocol, AvahiLookupFlags flags,
                                                         AvahiServiceResolverCallback callback, void *userdata) {
    return loaded_avahi_service_resolver_new(client, interface, protocol, name, type, domain, aprotocol, flags, callback, userdata);
}
int handoff_avahi_service_resolver_free(AvahiServiceResolver *resolver) { return loaded_avahi_service_resolver_free(resolver); }
const char *handoff_avahi_strerror(int error) { return loaded_avahi_strerror(error); }
struct timeval *handoff_avahi_elapse_time(struct timeval *tv, unsigned msec, unsigned jitter) {
    return loaded_avahi_elapse_time(tv, msec, jitter);
}
int handoff_avahi_service_name_join(char *p, size_t size, const char *name, const char *type, const char *domain) {
    return loaded_avahi_service_name_join(p, size, name, type, domain);
}
char *handoff_avahi_alternative_service_name(const char *s) { return loaded_avahi_alternative_service_name(s); }
void handoff_avahi_free(void *p) { loaded_avahi_free(p); }
char *handoff_avahi_address_snprint(char *buffer, size_t length, const AvahiAddress *address) {
    return loaded_avahi_address_snprint(buffer, length, address);
}
AvahiStringList *handoff_avahi_string_list_get_next(AvahiStringList *list) { return loaded_avahi_string_list_get_next(list); }
uint8_t *handoff_avahi_string_list_get_text(AvahiStringList *list) { return loaded_avahi_string_list_get_text(list); }
size_t handoff_avahi_string_list_get_size(AvahiStringList *list) { return loaded_avahi_string_list_get_size(list); }
