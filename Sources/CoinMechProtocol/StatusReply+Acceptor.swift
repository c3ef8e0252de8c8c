import CoinMechModel

extension StatusReply {
    /// A coin acceptor's or changer's part of `status` (docs/PROTOCOL.md, part three), typed:
    /// what its driver says of it (`DeviceStatus`), what the daemon's acceptor core counted, and
    /// the hoppers' levels on the ledger. A client reads it back with `init(json:)`: a changer's
    /// part is the one with tubes, a bus with hoppers the one that lists them.
    public struct Acceptor: Sendable, Equatable {
        public var device: DeviceStatus
        public var counts = Counts()
        /// Why the ledger could not record its last batch, until one is recorded.
        public var ledgerFailure: String?
        /// The hoppers' levels on the ledger, by unit.
        public var levels: [Int] = []

        /// What the acceptor core recorded since the start (lost events: since the last
        /// collection, from the ledger).
        public struct Counts: Sendable, Equatable {
            public var credited = 0
            public var uncredited = 0
            public var errorEvents = 0
            public var backlog = 0
            public var lostEvents = 0
            public var restarts = 0
            public var duplicates = 0
            public var lostReplies = 0

            public init() {}
        }

        public init(device: DeviceStatus) {
            self.device = device
        }

        /// Said loudly when coins may have been taken without credit.
        public var alarm: String? {
            if device.changer != nil {
                guard counts.lostReplies > 0 else { return nil }
                return "\(counts.lostReplies) POLL repl\(counts.lostReplies == 1 ? "y" : "ies") LOST: coins may have been kept without credit; the tube counts show those sent to a tube"
            }
            guard counts.lostEvents > 0 else { return nil }
            return "\(counts.lostEvents) event(s) LOST to buffer overruns: coins may have been taken without credit; poll faster or check the line"
        }

        public var json: JSON {
            var object: [String: JSON] = [
                "responding": .bool(device.responding), "held_for_ledger": .bool(device.heldForLedger),
                "credited": .int(Int64(counts.credited)), "uncredited": .int(Int64(counts.uncredited)), "duplicates": .int(Int64(counts.duplicates)),
            ]
            if let changer = device.changer {
                // "kind" for the clients that told a changer apart by it (the bridge passes it on).
                object["kind"] = "mdb"
                object["held_for_payout"] = .bool(changer.heldForPayout)
                object["lost_replies"] = .int(Int64(counts.lostReplies))
                object["event_number"] = .int(Int64(bitPattern: changer.lastCoin))
                object["coins"] = .object(Dictionary(uniqueKeysWithValues: changer.coins.map { ("\($0.key)", JSON.string($0.value)) }))
                object["tubes"] = .object(Dictionary(uniqueKeysWithValues: changer.coins.map { type, id in
                    (id, JSON.int(Int64(changer.tubes.indices.contains(type) ? changer.tubes[type] : 0)))
                }))
                if let taking = changer.acceptingTypes {
                    object["accepting"] = .bool(taking != 0)
                    object["accepting_coins"] = .array(changer.coins.keys.sorted().filter { taking & (1 << $0) != 0 }.map { .string(changer.coins[$0]!) })
                }
                if let level = changer.level { object["level"] = .int(Int64(level)) }
                if let identity = device.identity {
                    object["manufacturer"] = .string(identity.manufacturer)
                    object["product"] = .string(identity.product)
                    object["serial_number"] = .string(identity.serialNumber)
                }
            } else {
                let acceptor = device.acceptor ?? DeviceStatus.Acceptor()
                object["identified"] = .bool(acceptor.identified)
                object["fault"] = acceptor.fault.map(JSON.string) ?? .null
                object["error_events"] = .int(Int64(counts.errorEvents))
                object["backlog_events"] = .int(Int64(counts.backlog))
                object["lost_events"] = .int(Int64(counts.lostEvents))
                object["restarts"] = .int(Int64(counts.restarts))
                for (key, value) in [("polls", acceptor.polls), ("timeouts", acceptor.timeouts), ("retries", acceptor.retries), ("naks", acceptor.naks),
                                     ("busies", acceptor.busies)] { object[key] = .int(Int64(value)) }
                if let accepting = device.accepting { object["accepting"] = .bool(accepting) }
                if let positions = acceptor.enabledPositions { object["enabled_positions"] = .string(positions) }
                if let epoch = acceptor.epoch, let number = acceptor.eventNumber, let counter = acceptor.counter {
                    object["epoch"] = .int(Int64(bitPattern: epoch))
                    object["event_number"] = .int(Int64(bitPattern: number))
                    object["counter"] = .int(Int64(counter))
                }
                if let identity = device.identity {
                    object["manufacturer"] = .string(identity.manufacturer)
                    object["product"] = .string(identity.product)
                    if let serial = Int64(identity.serialNumber) { object["serial_number"] = .int(serial) }
                    object["coins"] = .object(Dictionary(uniqueKeysWithValues: acceptor.coins.map { ("\($0.key)", JSON.string($0.value)) }))
                }
            }
            if let alarm { object["alarm"] = .string(alarm) }
            if let ledgerFailure { object["ledger_failure"] = .string(ledgerFailure) }
            if let hoppers = device.hoppers {
                object["held_for_payout"] = .bool(hoppers.held)
                object["hoppers"] = .array(hoppers.units.map { hopper in
                    Self.json(hopper, level: levels.indices.contains(hopper.unit) ? levels[hopper.unit] : 0)
                })
            }
            return .object(object)
        }

        private static func json(_ hopper: DeviceStatus.Hopper, level: Int) -> JSON {
            var object: [String: JSON] = [
                "unit": .int(Int64(hopper.unit)), "address": .int(Int64(hopper.address)), "coin_id": .string(hopper.coinID),
                "value_minor": .int(hopper.valueMinor), "level": .int(Int64(level)), "responding": .bool(hopper.responding),
                "can_pay": .bool(hopper.canPay), "flags": .string(hopper.flags),
            ]
            if let serial = hopper.serialNumber { object["serial_number"] = .int(Int64(serial)) }
            if let reported = hopper.reportedCoin {
                object["reported_coin"] = .string(reported)
                object["alarm"] = .string("it reports coin \(reported), not the configured \(hopper.coinID): it pays nothing until the configuration or the hopper is put right")
            }
            if let counter = hopper.eventCounter {
                object["event_counter"] = .int(Int64(counter))
                object["paying"] = .int(Int64(hopper.paying ?? 0))
                object["last_paid"] = .int(Int64(hopper.lastPaid ?? 0))
                object["last_unpaid"] = .int(Int64(hopper.lastUnpaid ?? 0))
            }
            return .object(object)
        }

        /// Reads what `json` wrote; what an older daemon leaves out is zero, empty or nil.
        public init(json a: JSON) {
            var device = DeviceStatus(responding: a["responding"]?.bool != false)
            device.heldForLedger = a["held_for_ledger"]?.bool == true
            device.accepting = a["accepting"]?.bool
            func int(_ key: String) -> Int { Int(a[key]?.int ?? 0) }
            var counts = Counts()
            counts.credited = int("credited")
            counts.uncredited = int("uncredited")
            counts.duplicates = int("duplicates")
            counts.errorEvents = int("error_events")
            counts.backlog = int("backlog_events")
            counts.lostEvents = int("lost_events")
            counts.restarts = int("restarts")
            counts.lostReplies = int("lost_replies")
            if let manufacturer = a["manufacturer"]?.string {
                let serial = a["serial_number"]?.string ?? a["serial_number"]?.int.map { "\($0)" } ?? "?"
                device.identity = DeviceStatus.Identity(manufacturer: manufacturer, product: a["product"]?.string ?? "?", serialNumber: serial)
            }
            let coins = Dictionary(uniqueKeysWithValues: (a["coins"]?.object ?? [:]).compactMap { key, value in Int(key).flatMap { k in value.string.map { (k, $0) } } })
            if let tubes = a["tubes"]?.object {
                var changer = DeviceStatus.Changer()
                changer.coins = coins
                let last = coins.keys.max() ?? -1
                changer.tubes = last < 0 ? [] : (0...last).map { type in coins[type].flatMap { tubes[$0]?.int }.map(Int.init) ?? 0 }
                if let taking = a["accepting_coins"]?.array?.compactMap(\.string) {
                    changer.acceptingTypes = coins.filter { taking.contains($0.value) }.keys.reduce(UInt16(0)) { $0 | (1 << $1) }
                }
                changer.level = a["level"]?.int.map { UInt8(clamping: $0) }
                changer.lastCoin = UInt64(bitPattern: a["event_number"]?.int ?? 0)
                changer.heldForPayout = a["held_for_payout"]?.bool == true
                device.changer = changer
            } else {
                var acceptor = DeviceStatus.Acceptor()
                acceptor.identified = a["identified"]?.bool == true
                acceptor.coins = coins
                acceptor.enabledPositions = a["enabled_positions"]?.string
                acceptor.epoch = a["epoch"]?.int.map { UInt64(bitPattern: $0) }
                acceptor.eventNumber = a["event_number"]?.int.map { UInt64(bitPattern: $0) }
                acceptor.counter = a["counter"]?.int.map { UInt8(clamping: $0) }
                acceptor.fault = a["fault"]?.string
                acceptor.polls = int("polls")
                acceptor.timeouts = int("timeouts")
                acceptor.retries = int("retries")
                acceptor.naks = int("naks")
                acceptor.busies = int("busies")
                device.acceptor = acceptor
            }
            var levels: [Int] = []
            if let units = a["hoppers"]?.array {
                var hoppers = DeviceStatus.Hoppers()
                hoppers.held = a["held_for_payout"]?.bool == true
                for h in units {
                    var hopper = DeviceStatus.Hopper(unit: Int(h["unit"]?.int ?? 0), address: UInt8(clamping: h["address"]?.int ?? 0),
                                                     coinID: h["coin_id"]?.string ?? "?", valueMinor: h["value_minor"]?.int ?? 0)
                    hopper.responding = h["responding"]?.bool != false
                    hopper.canPay = h["can_pay"]?.bool == true
                    hopper.flags = h["flags"]?.string ?? "?"
                    hopper.serialNumber = h["serial_number"]?.int.map { UInt32(clamping: $0) }
                    hopper.reportedCoin = h["reported_coin"]?.string
                    hopper.eventCounter = h["event_counter"]?.int.map { UInt8(clamping: $0) }
                    hopper.paying = h["paying"]?.int.map(Int.init)
                    hopper.lastPaid = h["last_paid"]?.int.map(Int.init)
                    hopper.lastUnpaid = h["last_unpaid"]?.int.map(Int.init)
                    while levels.count <= hopper.unit { levels.append(0) }
                    levels[hopper.unit] = Int(h["level"]?.int ?? 0)
                    hoppers.units.append(hopper)
                }
                device.hoppers = hoppers
            }
            self.init(device: device)
            self.counts = counts
            self.levels = levels
            ledgerFailure = a["ledger_failure"]?.string
        }
    }
}

/// `status`: its reading never refuses (what an older daemon leaves out is zero, empty or nil).
extension StatusReply: OperatorReply {}
