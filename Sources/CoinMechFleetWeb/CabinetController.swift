import CoinMechFleet
import CoinMechSupport
import Foundation
import Hummingbird
import Logging

/// `/cabinet/<id>`: its page, an operator's count of a collection, and an admin's commands.
struct CabinetController {
    let store: FleetStore
    let outbox: CommandOutbox
    let logger: Logger

    func addRoutes(to router: some RouterMethods<FleetRequestContext>) {
        router.get("/cabinet/:id") { request, context -> Response in
            let who = try context.requireOperator()
            let id = try context.parameters.require("id")
            guard let page = try await store.cabinetPage(id, now: FleetWeb.now(), dayStart: FleetWeb.dayStart()) else {
                return FleetWeb.html(FleetPages.notFound("cabinet \(id)"), status: .notFound)
            }
            return FleetWeb.html(FleetPages.cabinet(page, user: who.name, admin: who.admin, message: request.uri.queryParameters.get("message")))
        }
        router.post("/cabinet/:id/collections", use: collection)
        router.post("/cabinet/:id/commands", use: command)
    }

    @Sendable func collection(_ request: Request, context: FleetRequestContext) async throws -> Response {
        let who = try context.requireOperator()
        let id = try context.parameters.require("id")
        struct Form: Decodable { var amount: String; var currency: String }
        guard let form = try? await URLEncodedFormDecoder().decode(Form.self, from: request, context: context),
              let minor = FleetWeb.minorUnits(form.amount), FleetWeb.isCurrency(form.currency.uppercased()) else {
            return FleetWeb.html(FleetPages.error("A collection needs an amount such as 12.35 and a currency such as USD."), status: .badRequest)
        }
        guard try await store.site(of: id) != nil else { return FleetWeb.html(FleetPages.notFound("cabinet \(id)"), status: .notFound) }
        let made = try await store.recordCollection(cabinet: id, by: who.name, currency: form.currency.uppercased(), countedMinor: minor, now: FleetWeb.now())
        logger.info("dashboard: \(LogText.quoted(who.name, limit: 64)) recorded a collection of \(LogText.quoted(id, limit: 64)): counted \(minor), ledger \(made.ledger.minor), difference \(made.difference)")
        return .redirect(to: "/cabinet/\(FleetPages.pathSegment(id))?message=collection+recorded")
    }

    @Sendable func command(_ request: Request, context: FleetRequestContext) async throws -> Response {
        let who = try context.requireOperator()
        guard who.admin else { return FleetWeb.html(FleetPages.error("Only an admin may send a cabinet a command."), status: .forbidden) }
        let id = try context.parameters.require("id")
        struct Form: Decodable { var name: String }
        let commands = ["inhibit_on": ("inhibit", "{\"on\":true}"), "inhibit_off": ("inhibit", "{\"on\":false}"), "status": ("status", "{}"), "totals": ("totals", "{}")]
        guard let form = try? await URLEncodedFormDecoder().decode(Form.self, from: request, context: context), let (name, args) = commands[form.name] else {
            return FleetWeb.html(FleetPages.error("Unknown command: choose one of \(commands.keys.sorted().joined(separator: ", "))."), status: .badRequest)
        }
        guard let site = try await store.site(of: id) else { return FleetWeb.html(FleetPages.notFound("cabinet \(id)"), status: .notFound) }
        let commandID = "web-\(UUID().uuidString.lowercased())"
        try await store.recordCommand(id: commandID, cabinet: id, name: name, args: args, by: who.name, now: FleetWeb.now())
        outbox.send(.init(id: commandID, cabinet: id, site: site, name: name, args: args, by: who.name))
        return .redirect(to: "/cabinet/\(FleetPages.pathSegment(id))?message=\(name)+sent")
    }
}
