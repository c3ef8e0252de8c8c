import CoinMechFleet
import Foundation
import Hummingbird

/// `/metrics` without a login, for Prometheus (bind `http.listen` to loopback, or keep it behind
/// the proxy).
struct MetricsController {
    let store: FleetStore
    let figures: FleetFigures
    let instance: String

    func addRoutes(to router: some RouterMethods<FleetRequestContext>) {
        router.get("/metrics") { _, _ -> Response in
            let text = try await FleetMetrics.text(store: store, figures: figures.snapshot, instance: instance, now: FleetWeb.now())
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
    }
}
