import CAvahi
import Glibc
import HandoffTransport
import HandoffRuntime

/// Avahi's poll API (`AvahiPoll`, avahi-common/watch.h) on the process's event loop, so
/// Avahi's client needs no thread of its own: its socket is one of the loop's descriptors,
/// its timeouts the loop's deadlines, and its callbacks run on the loop's thread.
///
/// Everything here is used on the loop's thread only (Avahi calls these functions from the
/// client's calls and callbacks, which run there); hence `@unchecked Sendable`.
final class AvahiLoopPoll: @unchecked Sendable {
    let loop: EventLoop
    /// The table Avahi calls through; `userdata` points back here.
    let api: UnsafeMutablePointer<AvahiPoll>

    init(loop: EventLoop) {
        self.loop = loop
        api = .allocate(capacity: 1)
        api.initialize(to: AvahiPoll(userdata: nil, watch_new: watchNew, watch_update: watchUpdate,
                                     watch_get_events: watchGetEvents, watch_free: watchFree, timeout_new: timeoutNew,
                                     timeout_update: timeoutUpdate, timeout_free: timeoutFree))
        api.pointee.userdata = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        api.deinitialize(count: 1)
        api.deallocate()
    }

    var pointer: UnsafePointer<AvahiPoll> { UnsafePointer(api) }

    fileprivate static func from(_ api: UnsafePointer<AvahiPoll>?) -> AvahiLoopPoll {
        Unmanaged<AvahiLoopPoll>.fromOpaque(api!.pointee.userdata).takeUnretainedValue()
    }

    /// One of Avahi's descriptors (its D-Bus socket). Avahi owns and closes it, after `watch_free`.
    /// Unchecked: Avahi creates, updates and frees it on the loop, where its handler runs.
    final class Watch: @unchecked Sendable {
        let fd: Int32
        let callback: AvahiWatchCallback
        let userdata: UnsafeMutableRawPointer?
        var events: AvahiWatchEvent
        /// What happened in the current dispatch (`watch_get_events`).
        var happened = AvahiWatchEvent(rawValue: 0)
        var loopWatch: EventLoop.Watch?
        var freed = false

        init(fd: Int32, events: AvahiWatchEvent, callback: AvahiWatchCallback, userdata: UnsafeMutableRawPointer?) {
            self.fd = fd
            self.events = events
            self.callback = callback
            self.userdata = userdata
        }

        static func interest(_ events: AvahiWatchEvent) -> EventLoop.Interest {
            var interest: EventLoop.Interest = []
            if events.rawValue & AVAHI_WATCH_IN.rawValue != 0 { interest.insert(.readable) }
            if events.rawValue & AVAHI_WATCH_OUT.rawValue != 0 { interest.insert(.writable) }
            return interest
        }

        func ready(_ readiness: EventLoop.Readiness) {
            guard !freed else { return }
            var happened: UInt32 = 0
            if readiness.isReadable { happened |= AVAHI_WATCH_IN.rawValue }
            if readiness.isWritable { happened |= AVAHI_WATCH_OUT.rawValue }
            if readiness.isHungUp { happened |= AVAHI_WATCH_HUP.rawValue }
            if readiness.isFailed { happened |= AVAHI_WATCH_ERR.rawValue }
            self.happened = AvahiWatchEvent(rawValue: happened)
            // Retained for the call: the callback may free this watch.
            withExtendedLifetime(self) {
                callback(OpaquePointer(Unmanaged.passUnretained(self).toOpaque()), fd, self.happened, userdata)
            }
            self.happened = AvahiWatchEvent(rawValue: 0)
        }
    }

    /// One of Avahi's timeouts: a loop deadline re-made on every update. Unchecked: Avahi
    /// creates, updates and frees it on the loop, where its deadline runs.
    final class Timeout: @unchecked Sendable {
        let poll: AvahiLoopPoll
        let callback: AvahiTimeoutCallback
        let userdata: UnsafeMutableRawPointer?
        var deadline: EventLoop.Deadline?
        var freed = false

        init(poll: AvahiLoopPoll, callback: AvahiTimeoutCallback, userdata: UnsafeMutableRawPointer?) {
            self.poll = poll
            self.callback = callback
            self.userdata = userdata
        }

        /// Arms for `when` (Avahi's wall-clock time, gettimeofday), or disarms for nil.
        func arm(_ when: UnsafePointer<timeval>?) {
            if let deadline { poll.loop.cancel(deadline) }
            deadline = nil
            guard let when else { return }
            var now = timeval()
            gettimeofday(&now, nil)
            let micros = Int64(when.pointee.tv_sec - now.tv_sec) * 1_000_000 + Int64(when.pointee.tv_usec - now.tv_usec)
            // Rounded up, so it never fires before Avahi's time (it would only be armed again).
            let millis = UInt64(max(0, (micros + 999) / 1000))
            deadline = poll.loop.after(millis: millis) { [self] in
                deadline = nil
                guard !freed else { return }
                withExtendedLifetime(self) {
                    callback(OpaquePointer(Unmanaged.passUnretained(self).toOpaque()), userdata)
                }
            }
        }
    }
}

private func watchObject(_ pointer: OpaquePointer?) -> AvahiLoopPoll.Watch {
    Unmanaged<AvahiLoopPoll.Watch>.fromOpaque(UnsafeRawPointer(pointer!)).takeUnretainedValue()
}

private func timeoutObject(_ pointer: OpaquePointer?) -> AvahiLoopPoll.Timeout {
    Unmanaged<AvahiLoopPoll.Timeout>.fromOpaque(UnsafeRawPointer(pointer!)).takeUnretainedValue()
}

private let watchNew: @convention(c) (UnsafePointer<AvahiPoll>?, Int32, AvahiWatchEvent, AvahiWatchCallback?,
                                      UnsafeMutableRawPointer?) -> OpaquePointer? = { api, fd, events, callback, userdata in
    guard let callback else { return nil }
    let poll = AvahiLoopPoll.from(api)
    let watch = AvahiLoopPoll.Watch(fd: fd, events: events, callback: callback, userdata: userdata)
    guard let loopWatch = try? poll.loop.watch(borrowing: fd, AvahiLoopPoll.Watch.interest(events), handler: { [watch] readiness in
        watch.ready(readiness)
    }) else { return nil }
    watch.loopWatch = loopWatch
    // Released in watch_free.
    return OpaquePointer(Unmanaged.passRetained(watch).toOpaque())
}

private let watchUpdate: @convention(c) (OpaquePointer?, AvahiWatchEvent) -> Void = { pointer, events in
    let watch = watchObject(pointer)
    watch.events = events
    watch.loopWatch?.update(AvahiLoopPoll.Watch.interest(events))
}

private let watchGetEvents: @convention(c) (OpaquePointer?) -> AvahiWatchEvent = { pointer in
    watchObject(pointer).happened
}

private let watchFree: @convention(c) (OpaquePointer?) -> Void = { pointer in
    let watch = watchObject(pointer)
    watch.freed = true
    // On the loop's thread, so the loop stops watching now, before Avahi closes the descriptor.
    watch.loopWatch?.close()
    watch.loopWatch = nil
    Unmanaged<AvahiLoopPoll.Watch>.fromOpaque(UnsafeRawPointer(pointer!)).release()
}

private let timeoutNew: @convention(c) (UnsafePointer<AvahiPoll>?, UnsafePointer<timeval>?, AvahiTimeoutCallback?,
                                        UnsafeMutableRawPointer?) -> OpaquePointer? = { api, when, callback, userdata in
    guard let callback else { return nil }
    let timeout = AvahiLoopPoll.Timeout(poll: AvahiLoopPoll.from(api), callback: callback, userdata: userdata)
    timeout.arm(when)
    // Released in timeout_free.
    return OpaquePointer(Unmanaged.passRetained(timeout).toOpaque())
}

private let timeoutUpdate: @convention(c) (OpaquePointer?, UnsafePointer<timeval>?) -> Void = { pointer, when in
    timeoutObject(pointer).arm(when)
}

private let timeoutFree: @convention(c) (OpaquePointer?) -> Void = { pointer in
    let timeout = timeoutObject(pointer)
    timeout.freed = true
    timeout.arm(nil)
    Unmanaged<AvahiLoopPoll.Timeout>.fromOpaque(UnsafeRawPointer(pointer!)).release()
}
