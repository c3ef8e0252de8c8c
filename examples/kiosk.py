#!/usr/bin/env python3
"""A small kiosk: waits until the customer's credit covers the price, sells the item with
`spend`, then gives the rest back with `cancel`.

    kiosk.py [--socket PATH] [--price 150] [--item A4] [--currency USD] [--wait 300]
             [--repeat] [--quiet] [--prefix TEXT]

--repeat serves one customer after another until stopped (`make demo` runs it so); --quiet
prints only the sales and the change, not each coin; --prefix puts TEXT before every line.
Needs a coinmechd with the credit commands, and a user in its socket.control_users (spend and
cancel are control commands). Standard library and the coinmech package only.
"""

from __future__ import annotations

import argparse
import sys
import time

import coinmech


def money(minor: int, currency: str | None) -> str:
    return f"{currency or ''} {minor / 100:.2f}".strip()


def coins(payout: coinmech.Payout) -> str:
    """`1 × USD25, 1 × USD10`: the coins a payout paid, as the daemon names them."""
    return ", ".join(f"{c.get('count', '?')} × {c.get('coin_id') or c.get('type', '?')}" for c in payout.coins)


def serve(client: coinmech.Client, args: argparse.Namespace, say) -> None:
    """One customer: waits for the credit, sells, pays the rest back as change."""
    # Watch first (only new events), then read the balance: no coin falls between the two.
    with client.watch().open() as events:
        balance = client.credit().balance(args.currency)
        deadline = time.monotonic() + args.wait
        while balance < args.price:
            if not args.quiet:
                say(f"insert {money(args.price - balance, args.currency)} (credit {money(balance, args.currency)})")
            event = events.poll(timeout=max(0.0, deadline - time.monotonic()))
            if event is None:
                say("no coin in time")
                break
            if isinstance(event, coinmech.CoinEvent) and not args.quiet:
                say(f"  coin: {event.denomination} {money(event.value_minor or 0, event.currency)}")
            if isinstance(event, (coinmech.CoinEvent, coinmech.CreditEvent)):
                balance = client.credit().balance(args.currency)

    if balance >= args.price:
        sale = client.spend(args.price, item=args.item, currency=args.currency)
        if isinstance(sale, coinmech.Approved):
            say(f"sold {args.item} for {money(sale.amount_minor, sale.currency)} "
                f"(sale {sale.request_id}, credit left {money(sale.balance_minor or 0, sale.currency)})")
            # ...vend the item here; if it cannot be vended: client.refund(sale.request_id)
            if not sale.balance_minor:
                say("no change due")
                return
        elif isinstance(sale, coinmech.Refused):
            say(f"credit short: {money(sale.balance_minor or 0, sale.currency)}")

    change = client.cancel()
    if isinstance(change, coinmech.Returned) and change.payout is not None:
        payout = change.payout
        line = f"change {money(payout.paid_minor or 0, change.currency)} paid"
        if payout.coins:
            line += f": {coins(payout)}"
        if payout.state != "done":
            line += f" ({payout.state}"
            line += f", owed {money(payout.debt_minor, change.currency)})" if payout.debt_minor else ")"
        if change.kept_minor:
            line += f"; {money(change.kept_minor, change.currency)} no coins make stays credit"
        say(line)
    elif isinstance(change, coinmech.Kept):
        say(f"credit kept ({change.reason}): {money(change.balance_minor or 0, change.currency)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", help="the daemon's socket (default $COINMECH_SOCKET or /run/coinmech/coinmechd.sock)")
    parser.add_argument("--price", type=int, default=150, help="the item's price in minor units (cents)")
    parser.add_argument("--item", default="A4")
    parser.add_argument("--currency", help="needed only where the cabinet takes several")
    parser.add_argument("--wait", type=float, default=300, help="seconds to wait for the credit")
    parser.add_argument("--repeat", action="store_true", help="serve customer after customer until stopped")
    parser.add_argument("--quiet", action="store_true", help="print only sales and change, not each coin")
    parser.add_argument("--prefix", default="", help="text put before every line printed (e.g. 'KIOSK: ')")
    args = parser.parse_args()

    def say(line: str) -> None:
        # One write a line (print writes the newline apart): whole lines among the watch's.
        sys.stdout.write(f"{args.prefix}{line}\n")
        sys.stdout.flush()

    client = coinmech.Client(args.socket)
    try:
        serve(client, args, say)
        while args.repeat:
            serve(client, args, say)
        return 0
    except coinmech.ConnectionFailed as error:
        # The retries are spent. A credit command can be asked again with its id: never charged twice.
        print(f"{args.prefix}coinmechd unreachable: {error} (request id {error.request_id})", file=sys.stderr)
        return 2
    except coinmech.CommandError as error:
        print(f"{args.prefix}coinmechd refused: {error.code}: {error.message}", file=sys.stderr)
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
