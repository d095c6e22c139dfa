import HandoffAPI
import HandoffCore
import HandoffKit
import HandoffTestSupport
import Testing

/// Pairing without a terminal dialog, as the notification agent does it: both laptops open
/// pairing (`pair --open`, which holds it while it runs), each hears the other can be paired,
/// one asks, both are told the code by event and answer with pairConfirm. A device's beacon
/// reaches the agent only while pairing is open here: the user asked.
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
            // Pairing is open while the connection that opened it stays (`pair --open` runs).
            let (openerOnA, openerOnB) = try await blocking { (try a.client(), try b.client()) }
            _ = try await blocking { try openerOnA.pairOpen(timeoutSeconds: 30) }
            // b hears a's clear beacon, but its user did not ask to pair: nothing is shown (a
            // stranger on the link cannot put pairing notifications on screen).
            _ = try await eventually("b to hear a's pairing beacon") { try openerOnB.pairable().first { $0.name == "laptop-a" } }
            _ = try await b.call { try $0.setEnabled(false) }
            let first = try await Self.next(eventsOnB) { event -> String? in
                switch event {
                case let .pairable(_, name): "pairable \(name)"
                case .disabled: "disabled"
                default: nil
                }
            }
            #expect(first == "disabled", "b told of a pairable device while pairing was closed on b")
            _ = try await b.call { try $0.setEnabled(true) }
            // Once b's user opens pairing too, b is told a can be paired: "laptop-a can be paired".
            _ = try await blocking { try openerOnB.pairOpen(timeoutSeconds: 30) }
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
            // Paired: pairing closes on both, and the agents are told (their "can be paired" go).
            let closedOnB = try await Self.next(eventsOnB) { event -> String? in
                if case let .pairingClosed(reason) = event { return reason }
                return nil
            }
            #expect(closedOnB == "paired")
            _ = (openerOnA, openerOnB)
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
            var openerOnA: HandoffClient? = try await blocking { try a.client() }
            _ = try await blocking { [openerOnA] in try openerOnA?.pairOpen(timeoutSeconds: 30) }
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
            // The command that opened pairing ends: pairing closes with it.
            openerOnA = nil
            let closed = try await Self.next(eventsOnA) { event -> String? in
                if case let .pairingClosed(reason) = event { return reason }
                return nil
            }
            #expect(closed == "opener-gone")
        }
    }
}
