import CoinMechFleet
import Foundation
import Hummingbird

/// `/`: every cabinet, its cash box, today's credit and its open alerts.
struct FleetPageController {
    let store: FleetStore

    func addRoutes(to router: some RouterMethods<FleetRequestContext>) {
        router.get("/") { _, context -> Response in
            let who = try context.requireOperator()
            return FleetWeb.html(FleetPages.fleet(try await store.fleetPage(now: FleetWeb.now(), dayStart: FleetWeb.dayStart()), user: who.name, admin: who.admin))
        }
    }
}
