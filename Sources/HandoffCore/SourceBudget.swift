/// Token buckets per source (an address, a Bluetooth address) plus one shared
/// bucket, for work that anyone on the link can ask for before proving who
/// they are. Pure: the caller passes the time. State is bounded: at most
/// `maximumSources` buckets; when a new source arrives at a full table the
/// least recently refilled one is forgotten (a forgotten source starts again
/// with a full bucket, which favours nobody).
public struct SourceBudget: Sendable {
    public struct Rate: Sendable, Equatable {
        /// Tokens added per second.
        public var perSecond: Double
        /// The most tokens a bucket holds (the burst).
        public var burst: Double

        public init(perSecond: Double, burst: Double) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }


    public let perSource: Rate
    public let overall: Rate
    public let maximumSources: Int
    private var buckets: [String: TokenBucket] = [:]
    private var shared: TokenBucket?

    public init(perSource: Rate, overall: Rate, maximumSources: Int) {
        self.perSource = perSource
        self.overall = overall
        self.maximumSources = max(1, maximumSources)
    }

    public var trackedSources: Int { buckets.count }

    /// Takes one token from `source`'s bucket and from the shared one; false
    /// (and nothing taken) when either is empty.
    /// `countingOverall` false: the source's own budget only (a known paired device, whose
    /// way in a stranger must not be able to spend).
    public mutating func allow(_ source: String, nowMillis: UInt64, countingOverall: Bool = true) -> Bool {
        var own = buckets[source] ?? TokenBucket(rate: perSource, nowMillis: nowMillis)
        var all = shared ?? TokenBucket(rate: overall, nowMillis: nowMillis)
        own.refill(nowMillis: nowMillis)
        all.refill(nowMillis: nowMillis)
        let allowed = own.tokens >= 1 && (!countingOverall || all.tokens >= 1)
        if allowed {
            own.tokens -= 1
            if countingOverall { all.tokens -= 1 }
        }
        if buckets[source] == nil, buckets.count >= maximumSources,
           let stalest = buckets.min(by: { $0.value.updatedMillis < $1.value.updatedMillis })?.key {
            buckets.removeValue(forKey: stalest)
        }
        buckets[source] = own
        shared = all
        return allowed
    }

}

/// One token bucket: `rate.perSecond` tokens a second, at most `rate.burst` held. Pure: the caller passes the time.
public struct TokenBucket: Sendable {
    public let rate: SourceBudget.Rate
    var tokens: Double
    var updatedMillis: UInt64

    /// Starts full.
    public init(rate: SourceBudget.Rate, nowMillis: UInt64) {
        self.rate = rate
        tokens = rate.burst
        updatedMillis = nowMillis
    }

    /// Takes one token; false (and nothing taken) when the bucket is empty.
    public mutating func take(nowMillis: UInt64) -> Bool {
        refill(nowMillis: nowMillis)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    mutating func refill(nowMillis: UInt64) {
        // A clock that steps back adds nothing rather than underflowing.
        let elapsed = nowMillis > updatedMillis ? Double(nowMillis - updatedMillis) / 1000 : 0
        tokens = min(rate.burst, tokens + elapsed * rate.perSecond)
        updatedMillis = max(updatedMillis, nowMillis)
    }
}
