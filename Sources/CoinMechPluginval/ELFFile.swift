import Foundation

/// What `coinmech-pluginval` reads of a shared object without running it: the symbols it
/// exports (defined, global or weak, in .dynsym) and the libraries it needs (DT_NEEDED).
/// 64-bit little-endian ELF, as on every machine CoinMech runs on.
struct ELFFile {
    var exported: [String] = []
    var needed: [String] = []

    /// Symbols the linker defines in every shared object; not the plugin's doing.
    static let linkerSymbols: Set<String> = ["_edata", "_end", "__bss_start", "_init", "_fini"]

    struct Malformed: Error, CustomStringConvertible {
        let why: String
        var description: String { "not a 64-bit little-endian ELF shared object: \(why)" }
    }

    init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw Malformed(why: "cannot read \(path)") }
        let bytes = [UInt8](data)
        guard bytes.count > 64, bytes[0..<4] == [0x7F, 0x45, 0x4C, 0x46] else { throw Malformed(why: "no ELF header") }
        guard bytes[4] == 2, bytes[5] == 1 else { throw Malformed(why: "class \(bytes[4]), data \(bytes[5])") }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        func u64(_ at: Int) -> Int { u32(at) | u32(at + 4) << 32 }
        func string(_ at: Int) -> String {
            guard at >= 0, at < bytes.count else { return "" }
            let end = bytes[at...].firstIndex(of: 0) ?? bytes.count
            return String(decoding: bytes[at..<end], as: UTF8.self)
        }
        struct Section { var type: Int; var offset: Int; var size: Int; var link: Int; var entrySize: Int }
        let (sectionOffset, sectionSize, sectionCount) = (u64(0x28), u16(0x3A), u16(0x3C))
        guard sectionOffset > 0, sectionOffset + sectionSize * sectionCount <= bytes.count else { throw Malformed(why: "section headers out of the file") }
        let sections = (0..<sectionCount).map { index -> Section in
            let at = sectionOffset + index * sectionSize
            return Section(type: u32(at + 4), offset: u64(at + 0x18), size: u64(at + 0x20), link: u32(at + 0x28), entrySize: u64(at + 0x38))
        }
        for section in sections where section.offset + section.size <= bytes.count {
            guard section.link < sections.count else { continue }
            let strings = sections[section.link].offset
            switch section.type {
            case 11:  // SHT_DYNSYM: name, info, other, shndx, value, size
                for at in stride(from: section.offset, to: section.offset + section.size, by: max(24, section.entrySize)) {
                    let binding = Int(bytes[at + 4]) >> 4, visibility = Int(bytes[at + 5]) & 3, index = u16(at + 6)
                    guard binding == 1 || binding == 2, index != 0, visibility != 2 else { continue }
                    exported.append(string(strings + u32(at)))
                }
            case 6:  // SHT_DYNAMIC: tag, value
                for at in stride(from: section.offset, to: section.offset + section.size, by: 16) where u64(at) == 1 {
                    needed.append(string(strings + u64(at + 8)))
                }
            default:
                continue
            }
        }
    }

    /// What a plugin exports besides the entry point and the linker's own symbols.
    var superfluous: [String] {
        exported.filter { $0 != "coinmech_plugin_entry" && !Self.linkerSymbols.contains($0) }.sorted()
    }

    /// Libraries a plugin may need on a CoinMech machine: the C library family, the Swift
    /// runtime and Foundation with what they bring. Anything else must be installed with it.
    static func isExpected(_ library: String) -> Bool {
        let prefixes = ["libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so", "ld-linux", "libgcc_s.so", "libstdc++.so",
                        "libswift", "libFoundation", "lib_Foundation", "libdispatch.so", "libBlocksRuntime.so", "libicu"]
        return prefixes.contains { library.hasPrefix($0) }
    }
}
