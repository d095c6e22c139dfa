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

    struct Bucket {
        var tokens: Double
        var updatedMillis: UInt64
    }

    public let perSource: Rate
    public let overall: Rate
    public let maximumSources: Int
    private var buckets: [String: Bucket] = [:]
    private var shared: Bucket?

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
        var own = buckets[source] ?? Bucket(tokens: perSource.burst, updatedMillis: nowMillis)
        var all = shared ?? Bucket(tokens: overall.burst, updatedMillis: nowMillis)
        Self.refill(&own, rate: perSource, nowMillis: nowMillis)
        Self.refill(&all, rate: overall, nowMillis: nowMillis)
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

    private static func refill(_ bucket: inout Bucket, rate: Rate, nowMillis: UInt64) {
        // A clock that steps back adds nothing rather than underflowing.
        let elapsed = nowMillis > bucket.updatedMillis ? Double(nowMillis - bucket.updatedMillis) / 1000 : 0
        bucket.tokens = min(rate.burst, bucket.tokens + elapsed * rate.perSecond)
        bucket.updatedMillis = max(bucket.updatedMillis, nowMillis)
    }
}
