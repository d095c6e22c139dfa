import HandoffCore

/// Every accept in progress: one job each, from its fetch to its one outcome. A job holds where
/// the activity continues, decided once before anything is fetched, so the reply, `willContinue`
/// and `continued` name the same place. A second accept of the same offer shares the running
/// job's outcome instead of fetching again.
struct AcceptJobs<Target, Waiter, AppWait> {
    /// An offer is a peer's activity at one sequence.
    struct Offer: Hashable {
        var peer: DeviceKey
        var sequence: UInt64
    }

    enum Phase: Equatable {
        case fetching
        /// Fetched: being handed to the app, the browser or the terminal.
        case delivering
        /// An app was started for it and has not taken it yet.
        case waitingForApp
    }

    struct Job {
        let id: Int64
        let offer: Offer
        let peer: DeviceID
        let type: String
        let target: Target
        /// The accepting client's ticket, handed on in `continued`.
        let ticket: String?
        fileprivate(set) var phase = Phase.fetching
        /// Its outcome was reported (failed while the daemon stops): nothing more is said of it.
        fileprivate(set) var reported = false
        /// Accepts of the same offer waiting for this one's outcome.
        fileprivate var sharers: [Waiter] = []
        /// What an app started for it must take (Daemon.launch).
        fileprivate var appWait: (desktopID: String, type: String, wait: AppWait)?
    }

    private var jobs: [Int64: Job] = [:]
    private var nextID: Int64 = 0
    /// The connections the fetches read from, by interface: a link that goes away moves them.
    let links = FetchLinks()

    var count: Int { jobs.count }

    func job(_ id: Int64) -> Job? { jobs[id] }

    /// A new job for `offer`, or nil when one already runs for it (then `share`).
    mutating func begin(_ offer: Offer, peer: DeviceID, type: String, target: Target, ticket: String? = nil) -> Int64? {
        guard !jobs.values.contains(where: { $0.offer == offer }) else { return nil }
        nextID += 1
        jobs[nextID] = Job(id: nextID, offer: offer, peer: peer, type: type, target: target, ticket: ticket)
        return nextID
    }

    /// Waits for the outcome of the job running for `offer`; false when none runs.
    mutating func share(_ offer: Offer, waiter: Waiter) -> Bool {
        guard let id = jobs.values.first(where: { $0.offer == offer })?.id else { return false }
        jobs[id]?.sharers.append(waiter)
        return true
    }

    mutating func enter(_ phase: Phase, _ id: Int64) {
        jobs[id]?.phase = phase
    }

    /// True the first time: the caller reports the outcome. False once it was reported.
    mutating func report(_ id: Int64) -> Bool {
        guard let job = jobs[id], !job.reported else { return false }
        jobs[id]?.reported = true
        return true
    }

    /// The daemon stops: every job not yet reported, each of which the caller reports failed now.
    mutating func reportAll() -> [Job] {
        let unreported = jobs.values.filter { !$0.reported }
        for job in unreported { jobs[job.id]?.reported = true }
        return unreported
    }

    /// The job ends; its sharers take the same outcome.
    mutating func end(_ id: Int64) -> [Waiter] {
        jobs.removeValue(forKey: id)?.sharers ?? []
    }

    // MARK: Apps started for a job

    mutating func waitForApp(_ id: Int64, desktopID: String, type: String, wait: AppWait) {
        guard jobs[id] != nil else { return }
        jobs[id]?.phase = .waitingForApp
        jobs[id]?.appWait = (desktopID, type, wait)
    }

    /// The app's wait of job `id` ends (it timed out or the app exited): nil when it was taken already.
    mutating func endAppWait(_ id: Int64) -> AppWait? {
        defer { jobs[id]?.appWait = nil }
        return jobs[id]?.appWait?.wait
    }

    /// An app declared: the waits it takes, by the `.desktop` file id it was started from
    /// (HandoffKit passes $HANDOFF_DESKTOP_ID back) or an app name that is that id, and a type it declares.
    mutating func takeAppWaits(app: String, desktopID: String?, types: Set<String>) -> [AppWait] {
        var taken: [AppWait] = []
        for (id, job) in jobs.sorted(by: { $0.key < $1.key }) {
            guard let wait = job.appWait, types.contains(wait.type) else { continue }
            let ids = [wait.desktopID, String(wait.desktopID.dropLast(wait.desktopID.hasSuffix(".desktop") ? 8 : 0))]
            guard desktopID.map(ids.contains) ?? false || ids.contains(app) else { continue }
            jobs[id]?.appWait = nil
            taken.append(wait.wait)
        }
        return taken
    }
}
