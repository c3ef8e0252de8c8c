import ArgumentParser
import CoinMechProtocol
import Foundation

extension CoinCtl {
    struct Credit: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The customer's credit the daemon holds: show it, spend it on a sale, put a sale back, pay it back as change.",
            discussion: """
                Coins the mech stores raise the credit; a sale (spend) lowers it, once per request id and never beyond it; \
                refund puts back a sale that failed after approval (the product did not drop); cancel pays the credit back \
                as change from the changer's tubes or the hoppers (what no coins make stays credit). Each is answered from \
                the ledger when asked again with its request id, across daemon restarts: retry with the same id, never a new one. \
                spend, refund and cancel are control commands. See OPERATIONS.md, "The customer's credit".
                """,
            subcommands: [Show.self, Spend.self, Refund.self, Cancel.self],
            defaultSubcommand: Show.self)
    }
}

extension CoinCtl.Credit {
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "The balance, per currency.")
        @OptionGroup var common: Common

        func run() throws {
            try common.run(.credit, as: CreditBalanceReply.self) { reply in
                reply.accounts.isEmpty ? "no credit is held for \(reply.source) yet"
                    : reply.accounts.map { "credit \(reply.source): \($0.currency) \(Format.money($0.balanceMinor, $0.currency)) (last moved by event #\($0.movedSeq))" }
                        .joined(separator: "\n")
            }
        }
    }

    struct Spend: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Approve a sale from the credit, once per request id; refused with the balance when short.")
        @OptionGroup var common: Common
        @Argument(help: "The price, e.g. 1.25.") var amount: String
        @Option(help: "What is sold (1 to 64 bytes), e.g. B4.") var item: String?
        @Option(help: "Its currency (default: the credit's only one).") var currency: String?
        @Option(name: .customLong("request-id"), help: "The sale's id: 1 to 64 of A-Z a-z 0-9 . _ : - (default: a new UUID).") var requestID: String?

        func validate() throws {
            guard let minor = CoinCtl.PayoutPlan.minorUnits(amount), ClientProtocol.payoutAmount.contains(minor) else {
                throw ValidationError("the price must be money such as 1.25, from 0.01 to \(Format.money(ClientProtocol.payoutAmount.upperBound, "")), got '\(amount)'")
            }
            if let item, !ClientProtocol.isItem(item) { throw ValidationError("--item must be 1 to 64 bytes of printable text, got '\(item)'") }
            try CoinCtl.RetryableRequest.validate(requestID)
        }

        func run() throws {
            try CoinCtl.RetryableRequest.run(common, "sale", requestID, as: CreditReply.self, learn: "whether it was approved", otherwise: "charge again",
                                             table: Format.credit) {
                .spend(amountMinor: CoinCtl.PayoutPlan.minorUnits(amount)!, currency: currency?.uppercased(), item: item, requestID: $0)
            }
        }
    }

    struct Refund: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Put back a sale that failed after approval: its amount is credit again, once.")
        @OptionGroup var common: Common
        @Argument(help: "The sale's request id.") var requestID: String

        func validate() throws { try CoinCtl.RetryableRequest.validate(requestID) }

        func run() throws {
            try common.run(.refund(requestID: requestID), as: CreditReply.self) { Format.credit($0) }
        }
    }

    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Pay the credit back as change (the customer's escrow return), once per request id.")
        @OptionGroup var common: Common
        @Option(name: .customLong("request-id"), help: "The return's id: 1 to 64 of A-Z a-z 0-9 . _ : - (default: a new UUID).") var requestID: String?

        func validate() throws { try CoinCtl.RetryableRequest.validate(requestID) }

        func run() throws {
            // It answers once the change is paid and counted, as a payout does.
            try CoinCtl.RetryableRequest.run(common, "return", requestID, as: CreditReply.self, timeout: 60, learn: "its outcome", otherwise: "pay again",
                                             table: Format.credit) { .cancel(requestID: $0) }
        }
    }
}
