import CoinMechSettings

extension DaemonConfiguration.Socket {
    /// Reads the `socket:` table: where the socket is, its mode and group, who may use control
    /// commands, and how many events a subscriber may have waiting.
    static func parse(_ socketTable: SettingsTable?, runtimeDirectory: String, resolve: (String) -> String) throws(SettingsError) -> Self {
        var socket = Self(path: "\(runtimeDirectory)/coinmechd.sock", mode: 0o660, group: nil, controlUsers: ["root"], controlGroups: [], maxQueuedEvents: 1024)
        guard let socketTable else { return socket }
        try socketTable.rejectUnknownKeys(["path", "mode", "group", "control_users", "control_groups", "max_queued_events", "max_clients", "idle_timeout_s"])
        if let path = try socketTable.string("path") { socket.path = resolve(path) }
        if let mode = try socketTable.string("mode") {
            guard let value = UInt32(mode, radix: 8), value <= 0o777 else { throw socketTable.error("mode", "must be an octal file mode such as \"0660\"") }
            socket.mode = value
        }
        socket.group = try socketTable.string("group")
        socket.controlUsers = try socketTable.strings("control_users") ?? socket.controlUsers
        socket.controlGroups = try socketTable.strings("control_groups") ?? socket.controlGroups
        if let queued = try socketTable.int("max_queued_events") {
            guard (16...1_000_000).contains(queued) else { throw socketTable.error("max_queued_events", "must be between 16 and 1000000") }
            socket.maxQueuedEvents = queued
        }
        if let clients = try socketTable.int("max_clients") {
            guard (1...512).contains(clients) else { throw socketTable.error("max_clients", "must be between 1 and 512 (each connection holds a descriptor of the daemon's)") }
            socket.maxClients = clients
        }
        if let idle = try socketTable.double("idle_timeout_s") {
            guard idle >= 0.1, idle <= 3600 else { throw socketTable.error("idle_timeout_s", "must be between 0.1 and 3600 seconds") }
            socket.idleTimeoutSeconds = idle
        }
        return socket
    }
}
