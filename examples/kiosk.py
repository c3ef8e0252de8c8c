#!/usr/bin/env python3
"""A small kiosk: waits until the customer's credit covers the price, sells the item with
`spend`, then gives the rest back with `cancel`.

    kiosk.py [--socket PATH] [--price 150] [--item A4] [--currency USD] [--wait 300]

Needs a coinmechd with the credit commands, and a user in its socket.control_users (spend and
cancel are control commands). Standard library and the coinmech package only.
"""

from __future__ import annotations

import argparse
import sys
import time

import coinmech


def money(minor: int, currency: str | None) -> str:
    return f"{minor / 100:.2f} {currency or ''}".strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", help="the daemon's socket (default $COINMECH_SOCKET or /run/coinmech/coinmechd.sock)")
    parser.add_argument("--price", type=int, default=150, help="the item's price in minor units (cents)")
    parser.add_argument("--item", default="A4")
    parser.add_argument("--currency", help="needed only where the cabinet takes several")
    parser.add_argument("--wait", type=float, default=300, help="seconds to wait for the credit")
    args = parser.parse_args()

    client = coinmech.Client(args.socket)
    try:
        # Watch first (only new events), then read the balance: no coin falls between the two.
        with client.watch().open() as events:
            balance = client.credit().balance(args.currency)
            deadline = time.monotonic() + args.wait
            while balance < args.price:
                print(f"insert {money(args.price - balance, args.currency)} (credit {money(balance, args.currency)})")
                event = events.poll(timeout=max(0.0, deadline - time.monotonic()))
                if event is None:
                    print("no coin in time")
                    break
                if isinstance(event, coinmech.CoinEvent):
                    print(f"  coin: {event.denomination} {money(event.value_minor or 0, event.currency)}")
                if isinstance(event, (coinmech.CoinEvent, coinmech.CreditEvent)):
                    balance = client.credit().balance(args.currency)

        if balance >= args.price:
            sale = client.spend(args.price, item=args.item, currency=args.currency)
            if isinstance(sale, coinmech.Approved):
                print(f"sold {args.item} for {money(sale.amount_minor, sale.currency)} "
                      f"(sale {sale.request_id}, credit left {money(sale.balance_minor or 0, sale.currency)})")
                # ...vend the item here; if it cannot be vended: client.refund(sale.request_id)
            elif isinstance(sale, coinmech.Refused):
                print(f"credit short: {money(sale.balance_minor or 0, sale.currency)}")

        change = client.cancel()
        if isinstance(change, coinmech.Returned) and change.payout is not None:
            print(f"change: {money(change.payout.paid_minor or 0, change.currency)} ({change.payout.state})")
        elif isinstance(change, coinmech.Kept):
            print(f"credit kept ({change.reason}): {money(change.balance_minor or 0, change.currency)}")
        return 0
    except coinmech.ConnectionFailed as error:
        # The retries are spent. A credit command can be asked again with its id: never charged twice.
        print(f"coinmechd unreachable: {error} (request id {error.request_id})", file=sys.stderr)
        return 2
    except coinmech.CommandError as error:
        print(f"coinmechd refused: {error.code}: {error.message}", file=sys.stderr)
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
