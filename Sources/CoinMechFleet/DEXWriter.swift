/// An EVA-DTS audit file around a transaction set's data segments (EVA-DTS 6.2, 2.4): the
/// application header `DXS`, the transaction set header `ST`, the data, the record integrity
/// check `G85` (`DEXCRC16` over `ST` … the CR LF before `G85`), the trailer `SE` (the number
/// of segments from `ST` to `SE`, both included) and the application trailer `DXE`. Every
/// segment ends with CR LF.
public struct DEXWriter: Sendable {
    /// `DXS01`, the communication id of the sender.
    public var sender: String

    public init(sender: String) { self.sender = sender }

    public func file(_ data: [DEXSegment]) -> String {
        let set = [DEXSegment("ST", ["001", "0001"])] + data
        let body = set.map { $0.text + "\r\n" }.joined()
        let check = DEXSegment("G85", [DEXCRC16.hex(DEXCRC16.checksum(body.utf8))])
        // ST, the data, G85 and SE itself.
        let trailer = DEXSegment("SE", ["\(set.count + 2)", "0001"])
        // DXS03 V0/6: every device of DTS 6.0 and later (2.4.1, note 3); one transaction set.
        let header = DEXSegment("DXS", [DEXSegment.alphanumeric(sender), "VA", "V0/6", "1"])
        return header.text + "\r\n" + body + check.text + "\r\n" + trailer.text + "\r\n" + DEXSegment("DXE", ["1", "1"]).text + "\r\n"
    }
}
