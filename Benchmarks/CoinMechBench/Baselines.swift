import CoinFacts

// (b) A faithful copy of the textbook Chain of Responsibility coin sorter (the vending-machine
// example of the design-patterns tutorials): a class hierarchy with a class per coin type, a
// handler protocol whose `next` is an existential, a handler per type holding ClosedRange
// windows at ±5 %, the client wrapping each reading in a new Coin, and a handler that creates
// a new coin object of its type (through the metatype) when the reading fits; first match wins.
// Left out: the tutorial's print calls, and its client's array of accepted coins with totals
// recomputed by `reduce` on every insertion, which exist only to print.

/// The coin model of the textbook: a class hierarchy with the nominal figures as class vars.
class Coin {
    class var standardDiameter: Double { 0 }
    class var standardWeight: Double { 0 }
    var centValue: Int { 0 }
    final let diameter: Double
    final let weight: Double

    required init(diameter: Double, weight: Double) {
        self.diameter = diameter
        self.weight = weight
    }
}

class Penny: Coin {
    override class var standardDiameter: Double { 19.05 }
    override class var standardWeight: Double { 2.5 }
    override var centValue: Int { 1 }
}
class Nickel: Coin {
    override class var standardDiameter: Double { 21.21 }
    override class var standardWeight: Double { 5.0 }
    override var centValue: Int { 5 }
}
class Dime: Coin {
    override class var standardDiameter: Double { 17.91 }
    override class var standardWeight: Double { 2.268 }
    override var centValue: Int { 10 }
}
class Quarter: Coin {
    override class var standardDiameter: Double { 24.26 }
    override class var standardWeight: Double { 5.67 }
    override var centValue: Int { 25 }
}

/// The textbook's handler protocol.
protocol CoinHandlerProtocol {
    var next: CoinHandlerProtocol? { get }
    func handleCoinValidation(_ unknownCoin: Coin) -> Coin?
}

/// One handler per coin type; on a match it creates a new coin object of its type.
class CoinHandler {
    var next: CoinHandlerProtocol?
    let coinType: Coin.Type
    let diameterRange: ClosedRange<Double>
    let weightRange: ClosedRange<Double>

    init(coinType: Coin.Type, diameterVariation: Double = 0.05, weightVariation: Double = 0.05) {
        self.coinType = coinType
        let standardDiameter = coinType.standardDiameter
        diameterRange = (1 - diameterVariation) * standardDiameter...(1 + diameterVariation) * standardDiameter
        let standardWeight = coinType.standardWeight
        weightRange = (1 - weightVariation) * standardWeight...(1 + weightVariation) * standardWeight
    }
}

extension CoinHandler: CoinHandlerProtocol {
    func handleCoinValidation(_ unknownCoin: Coin) -> Coin? {
        guard let coin = createCoin(from: unknownCoin) else { return next?.handleCoinValidation(unknownCoin) }
        return coin
    }

    private func createCoin(from unknownCoin: Coin) -> Coin? {
        guard diameterRange.contains(unknownCoin.diameter) else { return nil }
        guard weightRange.contains(unknownCoin.weight) else { return nil }
        return coinType.init(diameter: unknownCoin.diameter, weight: unknownCoin.weight)
    }
}

/// The textbook's client: wraps each reading in a Coin and asks the first handler.
final class TextbookCoinSorter {
    let coinHandler: CoinHandler

    init() {
        let penny = CoinHandler(coinType: Penny.self), nickel = CoinHandler(coinType: Nickel.self)
        let dime = CoinHandler(coinType: Dime.self), quarter = CoinHandler(coinType: Quarter.self)
        penny.next = nickel
        nickel.next = dime
        dime.next = quarter
        coinHandler = penny
    }

    /// Cents of the accepted coin, 0 when rejected.
    @inline(never)
    func insert(diameter: Double, weight: Double) -> Int {
        coinHandler.handleCoinValidation(Coin(diameter: diameter, weight: weight))?.centValue ?? 0
    }
}

// (c) The floor: a hand-written if ladder over the same ±5 % windows, inlined, no objects.
@inline(never)
func inlineLadder(_ d: Double, _ w: Double) -> Int {
    if d >= 18.0975 && d <= 20.0025 && w >= 2.375 && w <= 2.625 { return 1 }
    if d >= 20.1495 && d <= 22.2705 && w >= 4.75 && w <= 5.25 { return 5 }
    if d >= 17.0145 && d <= 18.8055 && w >= 2.1546 && w <= 2.3814 { return 10 }
    if d >= 23.047 && d <= 25.473 && w >= 5.3865 && w <= 5.9535 { return 25 }
    return 0
}
