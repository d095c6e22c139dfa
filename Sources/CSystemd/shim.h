#ifndef HANDOFF_CSYSTEMD_SHIM_H
#define HANDOFF_CSYSTEMD_SHIM_H
#include <systemd/sd-bus.h>
#include <systemd/sd-bus-vtable.h>
#include <string.h>

/* An empty method return; sd_bus_reply_method_return is variadic. */
static inline int handoff_bus_reply_empty(sd_bus_message *call) {
    return sd_bus_reply_method_return(call, NULL);
}

/* sd-bus describes exported objects with tables built by C macros (designated
   initialisers), which Swift cannot expand. These build them here, with the
   Swift trampolines passed in. The tables are static: sd-bus keeps pointing at
   them for as long as the object is exported. */

/* org.bluez.LEAdvertisement1 (doc/org.bluez.LEAdvertisement.rst): Release and
   the four properties handoffd sets. Every other property is absent, so
   bluetoothd adds nothing else (no name, appearance or TX power). */
static inline const sd_bus_vtable *handoff_advertisement_vtable(sd_bus_message_handler_t release,
                                                                sd_bus_property_get_t get) {
    static sd_bus_vtable table[7];
    const sd_bus_vtable built[7] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Release", "", "", release, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Type", "s", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ManufacturerData", "a{qv}", get, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MinInterval", "u", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("MaxInterval", "u", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END,
    };
    memcpy(table, built, sizeof built);
    return table;
}
/* org.bluez.AdvertisementMonitor1 (doc/org.bluez.AdvertisementMonitor.rst):
   an or-pattern on our manufacturer data. Registering one makes the kernel
   scan with duplicate filtering off, so every advertisement is reported. */
static inline const sd_bus_vtable *handoff_monitor_vtable(sd_bus_message_handler_t method,
                                                          sd_bus_property_get_t get) {
    static sd_bus_vtable table[9];
    const sd_bus_vtable built[9] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Release", "", "", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Activate", "", "", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("DeviceFound", "o", "", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("DeviceLost", "o", "", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Type", "s", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Patterns", "a(yyay)", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END,
    };
    memcpy(table, built, sizeof built);
    return table;
}
/* An error reply (sd_bus_reply_method_errorf is variadic). */
static inline int handoff_bus_reply_error(sd_bus_message *call, const char *name, const char *message) {
    sd_bus_error error = SD_BUS_ERROR_MAKE_CONST(name, message);
    return sd_bus_reply_method_error(call, &error);
}

/* org.kde.StatusNotifierItem (freedesktop.org StatusNotifierItem specification): the
   panel item. Every property the specification lists, so a host never reads an
   unknown one; the four methods and the six change signals. */
static inline const sd_bus_vtable *handoff_status_notifier_item_vtable(sd_bus_message_handler_t method,
                                                                       sd_bus_property_get_t get) {
    static sd_bus_vtable table[28];
    const sd_bus_vtable built[28] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("ContextMenu", "ii", "", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Activate", "ii", "", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("SecondaryActivate", "ii", "", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Scroll", "is", "", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Category", "s", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Id", "s", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Title", "s", get, 0, 0),
        SD_BUS_PROPERTY("Status", "s", get, 0, 0),
        SD_BUS_PROPERTY("WindowId", "i", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("IconThemePath", "s", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("IconName", "s", get, 0, 0),
        SD_BUS_PROPERTY("IconPixmap", "a(iiay)", get, 0, 0),
        SD_BUS_PROPERTY("OverlayIconName", "s", get, 0, 0),
        SD_BUS_PROPERTY("OverlayIconPixmap", "a(iiay)", get, 0, 0),
        SD_BUS_PROPERTY("AttentionIconName", "s", get, 0, 0),
        SD_BUS_PROPERTY("AttentionIconPixmap", "a(iiay)", get, 0, 0),
        SD_BUS_PROPERTY("AttentionMovieName", "s", get, 0, 0),
        SD_BUS_PROPERTY("ToolTip", "(sa(iiay)ss)", get, 0, 0),
        SD_BUS_PROPERTY("ItemIsMenu", "b", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Menu", "o", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_SIGNAL("NewTitle", "", 0),
        SD_BUS_SIGNAL("NewIcon", "", 0),
        SD_BUS_SIGNAL("NewAttentionIcon", "", 0),
        SD_BUS_SIGNAL("NewOverlayIcon", "", 0),
        SD_BUS_SIGNAL("NewToolTip", "", 0),
        SD_BUS_SIGNAL("NewStatus", "s", 0),
        SD_BUS_VTABLE_END,
    };
    memcpy(table, built, sizeof built);
    return table;
}

/* com.canonical.dbusmenu (libdbusmenu's dbus-menu.xml, version 3): the item's menu. */
static inline const sd_bus_vtable *handoff_dbusmenu_vtable(sd_bus_message_handler_t method,
                                                           sd_bus_property_get_t get) {
    static sd_bus_vtable table[16];
    const sd_bus_vtable built[16] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("GetLayout", "iias", "u(ia{sv}av)", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("GetGroupProperties", "aias", "a(ia{sv})", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("GetProperty", "is", "v", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Event", "isvu", "", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("EventGroup", "a(isvu)", "ai", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("AboutToShow", "i", "b", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("AboutToShowGroup", "ai", "aiai", method, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Version", "u", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("TextDirection", "s", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Status", "s", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("IconThemePath", "as", get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_SIGNAL("ItemsPropertiesUpdated", "a(ia{sv})a(ias)", 0),
        SD_BUS_SIGNAL("LayoutUpdated", "ui", 0),
        SD_BUS_SIGNAL("ItemActivationRequested", "iu", 0),
        SD_BUS_VTABLE_END,
    };
    memcpy(table, built, sizeof built);
    return table;
}
#endif
