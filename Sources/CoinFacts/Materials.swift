/// The metals of coins, slugs and washers, from handbooks, each figure with its source.
///
/// Pure metals are the handbooks' own figures. The coin alloys are not in any handbook under
/// their coin names, so they are built the way metallurgy builds them: copper's resistivity plus
/// what each dissolved element adds (Matthiessen's rule), with each element's share taken from a
/// handbook alloy of copper and that element alone; cupro-nickels follow Nordheim's rule
/// (ρ grows with x(1 − x) of the nickel atom fraction x), scaled to the handbook's 70-30. Their
/// temperature coefficients follow from the same rule: only copper's part of the resistivity
/// changes with temperature, so an alloy's coefficient is copper's scaled by ρ_Cu / ρ_alloy
/// ("cupro-nickel barely moves").
///
/// Sources:
/// - IEC 60028, International standard of resistance for copper: annealed copper 1/58 Ω·mm²/m
///   (1.7241 µΩ·cm) at 20 °C is 100 % IACS; its temperature coefficient 0.00393 per K at 20 °C.
/// - Copper Development Association (copper.org), alloy data sheets, conductivity at 20 °C:
///   C24000 low brass (Cu-20Zn) 32 % IACS; C26000 cartridge brass (Cu-30Zn) 28 % IACS; C60800
///   aluminium bronze (Cu-5Al) 17 % IACS; C51000 phosphor bronze (Cu-5Sn) 15 % IACS; and its
///   "Copper-nickel alloys: physical properties": 70-30 cupro-nickel 34 µΩ·cm.
/// - CRC Handbook of Chemistry and Physics, "Electrical resistivity of pure metals" (µΩ·cm at
///   273 K and 293 K): zinc 5.46 / 5.90, lead 19.2 / 20.8, nickel 6.16 / 6.93.
/// - ASM Metals Handbook, vol. 1, physical properties of carbon steels: AISI 1010 annealed,
///   14.3 µΩ·cm at 20 °C and 19.0 µΩ·cm at 100 °C.
/// - R. M. Bozorth, Ferromagnetism (1951): initial relative permeability of annealed nickel about
///   110, of annealed low-carbon iron and steel about 200 (the weak fields a coin coil makes).
public enum Materials {
    /// Copper's resistivity at 20 °C, µΩ·cm (IEC 60028).
    public static let copperResistivity = 1.7241
    /// Copper's temperature coefficient of resistivity at 20 °C, per K (IEC 60028).
    public static let copperCoefficient = 0.00393

    /// µΩ·cm a weight-% of each element adds to copper's resistivity, from the CDA's binary alloys.
    public enum Solute {
        /// C24000, Cu-20Zn, 32 % IACS.
        public static let zinc = (resistivity(iacs: 32) - copperResistivity) / 20
        /// C60800, Cu-5Al, 17 % IACS.
        public static let aluminium = (resistivity(iacs: 17) - copperResistivity) / 5
        /// C51000, Cu-5Sn, 15 % IACS.
        public static let tin = (resistivity(iacs: 15) - copperResistivity) / 5
        /// 70-30 cupro-nickel, 34 µΩ·cm: its chord, for the few % of nickel in a brass or bronze.
        public static let nickel = (34 - copperResistivity) / 30
    }

    static func resistivity(iacs: Double) -> Double { 172.41 / iacs }

    /// A copper alloy by Matthiessen's rule: copper plus each element's share, in weight %.
    static func copperAlloy(_ name: String, _ solutes: [(perPercent: Double, percent: Double)]) -> Material {
        let rho = copperResistivity + solutes.reduce(0) { $0 + $1.perPercent * $1.percent }
        return Material(name: name, iacs: 172.41 / rho, temperatureCoefficient: copperCoefficient * copperResistivity / rho)
    }

    /// A cupro-nickel by Nordheim's rule, through the CDA's 70-30 (34 µΩ·cm).
    static func cuproNickel(_ name: String, nickelPercent: Double) -> Material {
        func atomFraction(_ weightPercent: Double) -> Double {
            let nickel = weightPercent / 58.693, copper = (100 - weightPercent) / 63.546
            return nickel / (nickel + copper)
        }
        let reference = atomFraction(30)
        let scale = (34 - copperResistivity) / (reference * (1 - reference))
        let x = atomFraction(nickelPercent)
        let rho = copperResistivity + scale * x * (1 - x)
        return Material(name: name, iacs: 172.41 / rho, temperatureCoefficient: copperCoefficient * copperResistivity / rho)
    }

    /// A pure metal from the CRC's resistivities at 273 K and 293 K.
    static func pureMetal(_ name: String, at273: Double, at293: Double, permeability: Double = 1) -> Material {
        Material(name: name, iacs: 172.41 / at293, temperatureCoefficient: (at293 - at273) / (20 * at293), permeability: permeability)
    }

    /// Annealed copper: 100 % IACS by definition.
    public static let copper = Material(name: "copper", iacs: 100, temperatureCoefficient: copperCoefficient)
    /// US 5¢, the cladding of the dime and quarter, GBP 50p (and 5p, 10p before 2012), the €2 ring, the €1 centre.
    public static let cuproNickel25 = cuproNickel("cupro-nickel 75/25", nickelPercent: 25)
    /// GBP 20p: 84 % copper, 16 % nickel (Royal Mint).
    public static let cuproNickel16 = cuproNickel("cupro-nickel 84/16", nickelPercent: 16)
    /// €1 ring, €2 centre layers, the GBP £1 and £2 rings: CuZn20Ni5.
    public static let nickelBrass = copperAlloy("nickel brass CuZn20Ni5", [(Solute.zinc, 20), (Solute.nickel, 5)])
    /// EUR 10c, 20c, 50c: Cu89Al5Zn5Sn1 (European Central Bank, "Euro coins").
    public static let nordicGold = copperAlloy("Nordic gold CuAl5Zn5Sn1", [(Solute.aluminium, 5), (Solute.zinc, 5), (Solute.tin, 1)])
    /// The Thai 10 baht's centre: Cu92Al6Ni2 (Royal Thai Mint).
    public static let aluminiumBronze = copperAlloy("aluminium bronze CuAl6Ni2", [(Solute.aluminium, 6), (Solute.nickel, 2)])
    /// GBP 1p and 2p before 1992: Cu97Zn2.5Sn0.5 (Royal Mint).
    public static let bronze = copperAlloy("bronze CuZn2.5Sn0.5", [(Solute.zinc, 2.5), (Solute.tin, 0.5)])
    /// Brass slugs: C26000 cartridge brass, 28 % IACS (CDA); its coefficient by Matthiessen's rule.
    public static let brass = Material(name: "brass CuZn30", iacs: 28, temperatureCoefficient: copperCoefficient * copperResistivity / resistivity(iacs: 28))
    /// The US cent's core (99.2 % zinc).
    public static let zinc = pureMetal("zinc", at273: 5.46, at293: 5.90)
    /// Lead slugs.
    public static let lead = pureMetal("lead", at273: 19.2, at293: 20.8)
    /// Nickel plating, and the €1 and €2 centres' nickel layer.
    public static let nickel = pureMetal("nickel", at273: 6.16, at293: 6.93, permeability: 110)
    /// Low-carbon steel (AISI 1010): washers, slugs, the cores of plated-steel coins.
    public static let steel = Material(name: "low-carbon steel", iacs: 172.41 / 14.3, temperatureCoefficient: (19.0 - 14.3) / (80 * 14.3), permeability: 200)
}
