import HandoffAPI
import HandoffCore
import HandoffKit
import HandoffTestSupport
import Testing

/// Pairing without a terminal (issue 25), as the notification agent does it: one laptop opens
/// pairing and returns at once, the other hears it can be paired and asks, both are told the
/// code by event and answer with pairConfirm. A terminal waiting on the same dialog hears the end.
@Suite(.serialized) struct PairingEventsTests {
    /// Reads a subscribed client's events on a thread until `match` returns a value.
    static func next<T: Sendable>(_ events: HandoffClient, _ match: @escaping @Sendable (Event) -> T?) async throws -> T {
        try await blocking {
            while let received = try events.nextEvent() {
                if let event = received.event, let found = match(event) { return found }
            }
            throw HandoffError(.daemonUnavailable, "the event stream ended", fix: "")
        }
    }

    @Test func aPairableDeviceAndBothCodesArriveAsEventsAndBothAnswersPair() async throws {
        try await withTestLab { lab in
            let a = try await lab.start("laptop-a")
            let b = try await lab.start("laptop-b")
            let (eventsOnA, eventsOnB) = try await blocking { () -> (HandoffClient, HandoffClient) in
                let onA = try a.client(), onB = try b.client()
                try onA.subscribe()
                try onB.subscribe()
                return (onA, onB)
            }
            let aID = try await a.call { try $0.identity().deviceID }
            _ = try await a.call { try $0.pairOpen(timeoutSeconds: 30) }
            // b hears that a can be paired (its clear beacon): what the agent shows as "laptop-a can be paired".
            let pairable = try await Self.next(eventsOnB) { event -> String? in
                if case let .pairable(peer, name) = event, name == "laptop-a" { return peer }
                return nil
            }
            #expect(pairable == aID)
            // Pair… on b: both sides are told the dialog's code, each with its role.
            let offerOnB = try await b.call { try $0.pair(peer: pairable, address: nil) }
            let codeOnA = try await Self.next(eventsOnA) { event -> PairingCodeEvent? in
                if case let .pairingCode(code) = event { return code }
                return nil
            }
            let codeOnB = try await Self.next(eventsOnB) { event -> PairingCodeEvent? in
                if case let .pairingCode(code) = event { return code }
                return nil
            }
            #expect(codeOnA.code == offerOnB.code && codeOnB.code == offerOnB.code)
            #expect(codeOnA.role == "responder" && codeOnB.role == "initiator")
            #expect(codeOnB.session == offerOnB.session && codeOnA.name == "laptop-b")
            // Pair in both notifications.
            async let confirmedOnA = a.call { try $0.pairConfirm(session: codeOnA.session, accept: true) }
            let confirmedOnB = try await b.call { try $0.pairConfirm(session: codeOnB.session, accept: true) }
            #expect(confirmedOnB.name == "laptop-a")
            #expect(try await confirmedOnA.name == "laptop-b")
            let pairedOnB = try await Self.next(eventsOnB) { event -> String? in
                if case let .paired(_, name) = event { return name }
                return nil
            }
            #expect(pairedOnB == "laptop-a")
        }
    }

    @Test func aRejectEndsTheDialogOnBothSidesWithAnEvent() async throws {
        try await withTestLab { lab in
            let a = try await lab.start("laptop-a")
            let b = try await lab.start("laptop-b")
            let eventsOnA = try await blocking { () -> HandoffClient in
                let onA = try a.client()
                try onA.subscribe()
                return onA
            }
            let port = try await a.call { try $0.status().transferPort }
            _ = try await a.call { try $0.pairOpen(timeoutSeconds: 30) }
            let offerOnB = try await b.call { try $0.pair(peer: nil, address: "127.0.0.1:\(port)") }
            let codeOnA = try await Self.next(eventsOnA) { event -> PairingCodeEvent? in
                if case let .pairingCode(code) = event { return code }
                return nil
            }
            // Reject on a; b's answer (Pair) then learns it was declined, and a is told the dialog ended.
            async let rejected = a.call { try? $0.pairConfirm(session: codeOnA.session, accept: false) }
            await #expect(throws: HandoffError.self) { try await b.call { try $0.pairConfirm(session: offerOnB.session, accept: true) } }
            _ = try? await rejected
            let ended = try await Self.next(eventsOnA) { event -> HandoffError? in
                if case let .pairingEnded(session, _, _, error) = event, session == codeOnA.session { return error }
                return nil
            }
            #expect(ended.code == .declined)
            #expect(try await a.call { try $0.devices() }.isEmpty)
        }
    }
}
