import CoinMechFleet
import CoinMechSupport
import Foundation
import Hummingbird
import Logging

/// `/alerts/<id>/ack`: an operator acknowledges an alert. `ledger_conflict` (it releases the
/// cabinet's ack hold, F5) and `events_missing` (seqs the fleet gives up on, F8) are an admin's
/// to acknowledge.
struct AlertController {
    let store: FleetStore
    let logger: Logger

    func addRoutes(to router: some RouterMethods<FleetRequestContext>) {
        router.post("/alerts/:id/ack", use: acknowledge)
    }

    @Sendable func acknowledge(_ request: Request, context: FleetRequestContext) async throws -> Response {
        let who = try context.requireOperator()
        guard let id = Int64(try context.parameters.require("id")), let kind = try await store.openAlertKind(id: id) else {
            return FleetWeb.html(FleetPages.notFound("open alert"), status: .notFound)
        }
        guard who.admin || !FleetPages.adminAcknowledged.contains(kind) else {
            return FleetWeb.html(FleetPages.error("Only an admin may acknowledge \(kind): it settles the cabinet's ledger for the fleet."), status: .forbidden)
        }
        guard try await store.acknowledgeAlert(id: id, by: who.name, now: FleetWeb.now()) else { return FleetWeb.html(FleetPages.notFound("open alert \(id)"), status: .notFound) }
        logger.info("dashboard: \(LogText.quoted(who.name, limit: 64)) acknowledged alert \(id) (\(kind))")
        struct Form: Decodable { var next: String? }
        let next = (try? await URLEncodedFormDecoder().decode(Form.self, from: request, context: context))?.next
        return .redirect(to: FleetWeb.localPath(next) ?? FleetWeb.localPath(request.headers[.referer].flatMap { URL(string: $0)?.path }) ?? "/")
    }
}
