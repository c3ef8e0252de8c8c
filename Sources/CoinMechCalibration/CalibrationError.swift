/// Why a calibration could not be read or fitted, said as the person fixing it needs it.
public struct CalibrationError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
