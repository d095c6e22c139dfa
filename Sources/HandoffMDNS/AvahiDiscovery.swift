import CAvahi
import Glibc
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// mDNS through the system's avahi-daemon: publishes this host's
/// `_handoff._tcp` service and browses for others, resolving each to an
/// address, a port and its TXT record.
///
/// Avahi runs on the process's event loop (`AvahiLoopPoll`) and calls back on
/// the loop's thread. Every field below is touched only there, in a callback
/// or in work posted with `onLoop`, which makes the loop the single owner of
/// this state: hence `@unchecked Sendable`. The state text for `status` has
/// its own mutex so reading it never waits on Avahi.
///
/// Avahi's own rules are followed (Docs/PROTOCOL.md, "mDNS"): the client is
/// created with AVAHI_CLIENT_NO_FAIL, so it waits while avahi-daemon is absent;
/// services are registered only in S_RUNNING and withdrawn in S_COLLISION and
/// S_REGISTERING; a disconnect frees the client and makes a new one; an entry
/// group collision picks Avahi's alternative name. Each registration is a fresh
/// entry group, paced by `RegistrationPacer` (avahi holds a group committed too
/// often for minutes to hours; a registration it never confirms is made again).
public final class AvahiDiscovery: DiscoveryPath, @unchecked Sendable {
    public let name = DiscoveryPathName.mdns
    private let servicePort: UInt16
    private let interfaceIndex: Int32
    private let status = Locked(Status())

    /// What `status` reports; kept apart from Avahi's lock so reading it never waits on Avahi.
    public struct Status: Sendable {
        public var text = "starting"
        /// The instance name once Avahi confirmed the registration.
        public var publishedInstance: String?
        /// Connected to a running avahi-daemon.
        public var available = false
    }

    private let loop: EventLoop
    private var poll: AvahiLoopPoll?
    private var client: OpaquePointer?
    /// The service's own records (PTR, SRV, TXT): made afresh for every name.
    private var group: OpaquePointer?
    /// The `_services._dns-sd._udp` record that lists `_handoff._tcp` (RFC 6763 section 9), in a
    /// group of its own for as long as this host publishes. Published with the service (avahi's
    /// `add_service`), every new name withdrew it, and every other host's avahi announced its own
    /// copy again on both families: 2 x (N-1) packets per name change on a link of N hosts.
    private var typeGroup: OpaquePointer?
    private var browser: OpaquePointer?
    private var retryTimer: OpaquePointer?
    /// The pacer's one timer: the next commit it allows, or its watchdog.
    private var pacingTimer: OpaquePointer?
    private var pacer = RegistrationPacer()
    private var record: ServiceRecord?
    /// The name actually registered: the record's, or an alternative after a collision.
    private var registeredName: String?
    private var observer: (@Sendable (DiscoveryObservation) -> Void)?

    /// `servicePort` is the transfer port; `interface` limits publishing and browsing to one link.
    public init(servicePort: UInt16, interface: String?, loop: EventLoop = .shared) {
        self.servicePort = servicePort
        self.loop = loop
        let index = interface.map { Int32(if_nametoindex($0)) } ?? 0
        interfaceIndex = index > 0 ? index : AvahiIfIndex(AVAHI_IF_UNSPEC)
    }

    deinit {
        precondition(poll == nil, "AvahiDiscovery.stop() must run before it is released")
    }

    public let abilities: PathAbilities = [.find]

    /// Avahi gone or not yet there is a fault of the path: it retries by itself, but finds nothing meanwhile.
    public var health: PathHealth {
        status.withLock { PathHealth($0.available ? .working : .failed(.serviceMissing), $0.text) }
    }

    public func show(_ tokens: PeriodTokens?) {
        publish(tokens?.service.map { ServiceRecord(token: $0) })
    }
    public var currentStatus: Status { status.withLock { $0 } }

    private func setState(_ text: String, available: Bool? = nil, published: String?? = nil) {
        status.withLock {
            $0.text = text
            if let available { $0.available = available }
            if let published { $0.publishedInstance = published }
        }
    }

    public func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError) {
        // Like a missing avahi-daemon, a missing library is not fatal: status says what to install.
        if let failure = handoff_avahi_load() {
            setState("unavailable: avahi's client library cannot be loaded (\(String(cString: failure))); install libavahi-client3",
                     available: false, published: .some(nil))
            return
        }
        onLoop { [self] in
            guard poll == nil else { return }
            poll = AvahiLoopPoll(loop: loop)
            self.observer = observer
            connect()
        }
    }

    public func announce(_ datagrams: [OutgoingAnnouncement]) {
        // mDNS carries no announcements: peers found here get them by unicast (the daemon sends those).
    }

    /// Publishes `record` (a new token after rotation), or withdraws the service when nil.
    public func publish(_ record: ServiceRecord?) {
        onLoop { [self] in
            guard record != self.record else { return }
            self.record = record
            registeredName = record?.instanceName
            register()
        }
    }

    /// Frees the client (which withdraws the service) on the loop; waits for it unless called there.
    public func stop() {
        let done = Signals(value: 0)
        onLoop { [self] in
            defer { done.signal() }
            guard let poll else { return }
            if let retryTimer { handoff_avahi_timeout_free(poll.pointer, retryTimer) }
            retryTimer = nil
            if let pacingTimer { handoff_avahi_timeout_free(poll.pointer, pacingTimer) }
            pacingTimer = nil
            if let client { handoff_avahi_client_free(client) } // frees the groups, browser and resolvers too
            client = nil
            group = nil
            typeGroup = nil
            browser = nil
            self.poll = nil
            setState("stopped", available: false, published: .some(nil))
        }
        if !loop.inLoop { done.wait() }
    }

    /// Runs `body` on the loop's thread: at once when called there (Avahi's callbacks), else posted.
    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        if loop.inLoop { body() } else { loop.execute(body) }
    }

    // MARK: - Client lifecycle (on the loop)

    fileprivate func connect() {
        guard let poll else { return }
        var error: Int32 = 0
        let context = Unmanaged.passUnretained(self).toOpaque()
        let created = handoff_avahi_client_new(poll.pointer, AVAHI_CLIENT_NO_FAIL, clientTrampoline, context, &error)
        if created == nil {
            // Even NO_FAIL cannot wait for a missing system bus: retry on a timer.
            setState("unavailable: \(String(cString: handoff_avahi_strerror(error))) (is dbus running?); retrying every 5 s",
                     available: false, published: .some(nil))
            scheduleRetry()
            return
        }
        // The callback may already have stored it: it runs inside handoff_avahi_client_new.
        client = created
    }

    private func scheduleRetry() {
        guard let poll else { return }
        var when = timeval()
        handoff_avahi_elapse_time(&when, 5_000, 0)
        let context = Unmanaged.passUnretained(self).toOpaque()
        retryTimer = handoff_avahi_timeout_new(poll.pointer, &when, retryTrampoline, context)
    }

    fileprivate func retry() {
        if let poll, let retryTimer { handoff_avahi_timeout_free(poll.pointer, retryTimer) }
        retryTimer = nil
        connect()
    }

    fileprivate func clientChanged(_ changed: OpaquePointer, _ clientState: AvahiClientState) {
        client = changed
        switch clientState {
        case AVAHI_CLIENT_S_RUNNING:
            register()
            browse()
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name is being (re)established: withdraw until S_RUNNING.
            freeGroup()
            pacer.withdrawn()
            setState("avahi-daemon is registering its host name; waiting", available: true, published: .some(nil))
        case AVAHI_CLIENT_CONNECTING:
            setState("unavailable: avahi-daemon is not running; waiting for it", available: false, published: .some(nil))
        case AVAHI_CLIENT_FAILURE:
            let error = handoff_avahi_client_errno(changed)
            // Freeing the client frees its groups and browser: forget them first.
            group = nil
            typeGroup = nil
            browser = nil
            pacer.withdrawn()
            handoff_avahi_client_free(changed)
            client = nil
            if error == AVAHI_ERR_DISCONNECTED {
                setState("unavailable: avahi-daemon went away; waiting for it to return", available: false, published: .some(nil))
                observer?(.servicesReset)
                connect()
            } else {
                setState("unavailable: \(String(cString: handoff_avahi_strerror(error))); retrying every 5 s",
                         available: false, published: .some(nil))
                scheduleRetry()
            }
        default:
            break
        }
    }

    // MARK: - Publishing

    /// The record (or the registered name) changed: the pacer says when to commit it.
    private func register() {
        guard let client, handoff_avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING else { return }
        guard record != nil, registeredName != nil else {
            freeGroup()
            pacer.withdrawn()
            setState("browsing; not publishing", published: .some(nil))
            return
        }
        perform(pacer.changed(nowMillis: monotonicMillis()))
    }

    private func perform(_ action: RegistrationPacer.Action) {
        guard let poll else { return }
        if let pacingTimer { handoff_avahi_timeout_free(poll.pointer, pacingTimer) }
        pacingTimer = nil
        switch action {
        case .commit:
            commit()
            // The watchdog's time, from the pacer.
            perform(pacer.timerFired(nowMillis: monotonicMillis()))
        case let .wait(until):
            var when = timeval()
            let now = monotonicMillis()
            handoff_avahi_elapse_time(&when, UInt32(until > now ? min(until - now, 3_600_000) : 0), 0)
            let context = Unmanaged.passUnretained(self).toOpaque()
            pacingTimer = handoff_avahi_timeout_new(poll.pointer, &when, pacingTrampoline, context)
        case .idle:
            break
        }
    }

    fileprivate func pacingTimerFired() {
        perform(pacer.timerFired(nowMillis: monotonicMillis()))
    }

    /// Registers the record in a fresh entry group (freeing the old one withdraws what it held):
    /// a new group starts without the hold-off avahi piles onto a group committed often. The
    /// service type's listing stays in its own group (`typeGroup`).
    private func commit() {
        guard let client, handoff_avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING,
              let record, let name = registeredName else { return }
        if let group { handoff_avahi_entry_group_free(group) }
        group = nil
        if typeGroup == nil { publishServiceType(client) }
        let context = Unmanaged.passUnretained(self).toOpaque()
        group = handoff_avahi_entry_group_new(client, groupTrampoline, context)
        guard let group else {
            setState("error: cannot create an entry group: \(String(cString: handoff_avahi_strerror(handoff_avahi_client_errno(client))))")
            return
        }
        var status = addServiceRecords(to: group, client: client, name: name, record: record)
        if status == AVAHI_ERR_COLLISION {
            renameAfterCollision()
            return
        }
        if status >= 0 { status = handoff_avahi_entry_group_commit(group) }
        if status < 0 {
            setState("error: cannot register \(ServiceRecord.serviceType): \(String(cString: handoff_avahi_strerror(status)))")
        } else {
            setState("registering \(name)")
        }
    }

    /// What avahi's `add_service` publishes, less the service type's listing: the PTR from the
    /// type to the instance (shared), and the instance's SRV and TXT (unique, so avahi probes
    /// them and reports a collision), with avahi's own TTLs.
    private func addServiceRecords(to group: OpaquePointer, client: OpaquePointer, name: String, record: ServiceRecord) -> Int32 {
        let domain = String(cString: handoff_avahi_client_get_domain_name(client))
        let host = String(cString: handoff_avahi_client_get_host_name_fqdn(client))
        let typeLabels = ServiceRecordData.labels(ServiceRecord.serviceType) + ServiceRecordData.labels(domain)
        var instance = [CChar](repeating: 0, count: Int(AVAHI_DOMAIN_NAME_MAX))
        guard handoff_avahi_service_name_join(&instance, instance.count, name, ServiceRecord.serviceType, domain) >= 0,
              let pointer = ServiceRecordData.name([name] + typeLabels),
              let service = ServiceRecordData.service(port: servicePort, target: ServiceRecordData.labels(host)),
              let text = ServiceRecordData.text(record.txt) else { return Int32(AVAHI_ERR_INVALID_SERVICE_NAME) }
        let owner = cText(instance)
        var status = add(group, name: "\(ServiceRecord.serviceType).\(domain)", type: AVAHI_DNS_TYPE_PTR, ttl: 4500, unique: false, pointer)
        if status >= 0 { status = add(group, name: owner, type: AVAHI_DNS_TYPE_SRV, ttl: 120, unique: true, service) }
        if status >= 0 { status = add(group, name: owner, type: AVAHI_DNS_TYPE_TXT, ttl: 4500, unique: true, text) }
        return status
    }

    private func add(_ group: OpaquePointer, name: String, type: Int, ttl: UInt32, unique: Bool, _ data: [UInt8]) -> Int32 {
        data.withUnsafeBytes { bytes in
            handoff_avahi_entry_group_add_record(group, interfaceIndex, AvahiProtocol(AVAHI_PROTO_UNSPEC),
                                         AvahiPublishFlags(unique ? AVAHI_PUBLISH_UNIQUE.rawValue : 0), name,
                                         UInt16(AVAHI_DNS_CLASS_IN), UInt16(type), ttl, bytes.baseAddress, bytes.count)
        }
    }

    /// `_services._dns-sd._udp.local PTR _handoff._tcp.local`, once while this host publishes. A
    /// failure here costs only the listing of the type (browsing by type does not use it).
    private func publishServiceType(_ client: OpaquePointer) {
        let domain = String(cString: handoff_avahi_client_get_domain_name(client))
        guard let typeGroup = handoff_avahi_entry_group_new(client, typeGroupTrampoline, nil),
              let target = ServiceRecordData.name(ServiceRecordData.labels(ServiceRecord.serviceType) + ServiceRecordData.labels(domain)) else { return }
        self.typeGroup = typeGroup
        if add(typeGroup, name: "_services._dns-sd._udp.\(domain)", type: AVAHI_DNS_TYPE_PTR, ttl: 4500, unique: false, target) < 0
            || handoff_avahi_entry_group_commit(typeGroup) < 0 {
            handoff_avahi_entry_group_free(typeGroup)
            self.typeGroup = nil
        }
    }

    /// Withdraws everything this host publishes.
    private func freeGroup() {
        if let group { handoff_avahi_entry_group_free(group) }
        group = nil
        if let typeGroup { handoff_avahi_entry_group_free(typeGroup) }
        typeGroup = nil
    }

    private func renameAfterCollision() {
        guard let current = registeredName, let alternative = handoff_avahi_alternative_service_name(current) else { return }
        registeredName = String(cString: alternative)
        handoff_avahi_free(alternative)
        register()
    }

    fileprivate func groupChanged(_ changed: OpaquePointer, _ groupState: AvahiEntryGroupState) {
        // Only the current group's news counts (a freed one says nothing more, but be sure).
        guard group == nil || group == changed else { return }
        group = changed
        switch groupState {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            pacer.established()
            setState("published \(registeredName ?? "?").\(ServiceRecord.serviceType) port \(servicePort); browsing",
                     available: true, published: .some(registeredName))
        case AVAHI_ENTRY_GROUP_COLLISION:
            renameAfterCollision()
        case AVAHI_ENTRY_GROUP_FAILURE:
            let error = client.map { handoff_avahi_client_errno($0) } ?? 0
            setState("error: registration failed: \(String(cString: handoff_avahi_strerror(error)))")
        default:
            break
        }
    }

    // MARK: - Browsing

    private func browse() {
        guard let client, browser == nil else { return }
        let context = Unmanaged.passUnretained(self).toOpaque()
        browser = handoff_avahi_service_browser_new(client, interfaceIndex, AvahiProtocol(AVAHI_PROTO_UNSPEC), ServiceRecord.serviceType,
                                            nil, AvahiLookupFlags(0), browserTrampoline, context)
        if browser == nil {
            setState("error: cannot browse: \(String(cString: handoff_avahi_strerror(handoff_avahi_client_errno(client))))")
        }
    }

    fileprivate func browserEvent(interface: AvahiIfIndex, protocol: AvahiProtocol, event: AvahiBrowserEvent,
                                  name: String, type: String, domain: String, flags: AvahiLookupResultFlags) {
        guard let client else { return }
        switch event {
        case AVAHI_BROWSER_NEW:
            if flags.rawValue & AVAHI_LOOKUP_RESULT_OUR_OWN.rawValue != 0 { return }
            let context = Unmanaged.passUnretained(self).toOpaque()
            // Freed in its callback once it has answered.
            _ = handoff_avahi_service_resolver_new(client, interface, `protocol`, name, type, domain, `protocol`,
                                           AvahiLookupFlags(0), resolverTrampoline, context)
        case AVAHI_BROWSER_REMOVE:
            observer?(.serviceLost(instance: name))
        case AVAHI_BROWSER_FAILURE:
            setState("error: browsing failed: \(String(cString: handoff_avahi_strerror(handoff_avahi_client_errno(client))))")
        default:
            break
        }
    }

    fileprivate func resolved(interface: AvahiIfIndex, name: String, host: String?, port: UInt16, txt: [String]) {
        guard let host else { return }
        var numeric = host
        // Avahi prints link-local IPv6 without its zone; sockets need it.
        if host.lowercased().hasPrefix("fe80:") {
            var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            if if_indextoname(UInt32(bitPattern: interface), &buffer) != nil {
                numeric += "%" + cText(buffer)
            }
        }
        observer?(.serviceFound(ServiceSighting(instance: name, host: numeric, port: port, txt: txt)))
    }
}

// MARK: - C trampolines: recover the object, copy C data into Swift values, never throw.

/// A NUL-terminated C buffer as a Swift string.
private func cText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

private func owner(_ userdata: UnsafeMutableRawPointer?) -> AvahiDiscovery? {
    userdata.map { Unmanaged<AvahiDiscovery>.fromOpaque($0).takeUnretainedValue() }
}

private let clientTrampoline: AvahiClientCallback = { client, state, userdata in
    guard let client else { return }
    owner(userdata)?.clientChanged(client, state)
}

private let groupTrampoline: AvahiEntryGroupCallback = { group, state, userdata in
    guard let group else { return }
    owner(userdata)?.groupChanged(group, state)
}

/// The service type's listing needs no news: it is shared, so it never collides.
private let typeGroupTrampoline: AvahiEntryGroupCallback = { _, _, _ in }

private let retryTrampoline: AvahiTimeoutCallback = { _, userdata in
    owner(userdata)?.retry()
}

private let pacingTrampoline: AvahiTimeoutCallback = { _, userdata in
    owner(userdata)?.pacingTimerFired()
}

private let browserTrampoline: AvahiServiceBrowserCallback = { _, interface, proto, event, name, type, domain, flags, userdata in
    owner(userdata)?.browserEvent(interface: interface, protocol: proto, event: event,
                                  name: name.map { String(cString: $0) } ?? "", type: type.map { String(cString: $0) } ?? "",
                                  domain: domain.map { String(cString: $0) } ?? "", flags: flags)
}

private let resolverTrampoline: AvahiServiceResolverCallback = { resolver, interface, _, event, name, _, _, _, address, port, txt, _, userdata in
    defer { if let resolver { handoff_avahi_service_resolver_free(resolver) } }
    guard event == AVAHI_RESOLVER_FOUND, let name else { return }
    var host: String?
    if let address {
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        handoff_avahi_address_snprint(&buffer, buffer.count, address)
        host = cText(buffer)
    }
    var strings: [String] = []
    var cursor = txt
    // Bounded: a hostile responder cannot make us collect without limit.
    while let entry = cursor, strings.count < 32 {
        let bytes = UnsafeBufferPointer(start: handoff_avahi_string_list_get_text(entry), count: handoff_avahi_string_list_get_size(entry))
        strings.append(String(decoding: bytes, as: UTF8.self))
        cursor = handoff_avahi_string_list_get_next(entry)
    }
    owner(userdata)?.resolved(interface: interface, name: String(cString: name), host: host, port: port, txt: strings)
}
