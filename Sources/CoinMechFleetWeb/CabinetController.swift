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
        router.get("/cabinet/:id/dex", use: dex)
        router.post("/cabinet/:id/collections", use: collection)
        router.post("/cabinet/:id/commands", use: command)
    }

    /// The cabinet's EVA-DTS audit for `?from=…&to=…` as a file to save (docs/FLEET.md, "DEX
    /// export"), behind the same login as its page.
    @Sendable func dex(_ request: Request, context: FleetRequestContext) async throws -> Response {
        _ = try context.requireOperator()
        let id = try context.parameters.require("id")
        let query = request.uri.queryParameters
        let period: ExportPeriod
        do { period = try ExportPeriod(from: query.get("from") ?? "", to: query.get("to") ?? "") } catch {
            return FleetWeb.html(FleetPages.error("No DEX file: \(error.description)."), status: .badRequest)
        }
        let currency = query.get("currency").flatMap { $0.isEmpty ? nil : $0.uppercased() }
        if let currency, !FleetWeb.isCurrency(currency) { return FleetWeb.html(FleetPages.error("The currency is a code such as USD."), status: .badRequest) }
        let audit: DEXAudit?, text: String
        do {
            audit = try await store.dexAudit(cabinet: id, from: period.from, to: period.to, currency: currency)
            text = try audit?.file() ?? ""
        } catch let refused as DEXError {
            return FleetWeb.html(FleetPages.error("No DEX file: \(refused.description)."), status: .unprocessableContent)
        }
        guard let audit else { return FleetWeb.html(FleetPages.notFound("cabinet \(id)"), status: .notFound) }
        return Response(status: .ok, headers: [.contentType: "text/plain; charset=us-ascii", .contentDisposition: "attachment; filename=\"\(audit.fileName)\"",
                                               .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(string: text)))
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
