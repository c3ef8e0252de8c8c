"""Events, hello, results and errors read from the documented lines."""

import json
import unittest

import coinmech
from coinmech import errors
from coinmech.results import parse_credit_result, parse_hello, parse_totals, parse_credit, parse_events_page


# Lines as docs/PROTOCOL.md and the credit commands' contract print them.
COIN = json.loads('{"seq":59,"time":1795286947.0,"kind":"coin","source":"serial","epoch":1,"device_seq":12,"currency":"USD",'
                  '"denomination":"quarter","value_minor":25,"link":"usd","chain_generation":3,"ref_seq":57,"message":"stored"}')
REJECT = json.loads('{"seq":58,"time":1795286946.5,"kind":"decision","source":"serial","verdict":"reject","reason":"too_light",'
                    '"message":"lighter than 1.5 g: washer, token or foil?","link":"weight-floor","chain_generation":3}')
SOURCE_LOST = json.loads('{"seq":60,"time":1795286950.25,"kind":"source_lost","source":"serial",'
                         '"detail":{"device":"/dev/coinmech0","reason":"hang-up"}}')
SPENT = json.loads('{"seq":413,"time":1795287000.5,"kind":"credit_spent","source":"coinmech0","currency":"USD","value_minor":150,'
                   '"detail":{"request_id":"sale-7","account":"coinmech0","by":"kiosk","balance_minor":"25","item":"A4"}}')


class EventParsingTests(unittest.TestCase):
    def test_coin_is_money_with_every_field(self):
        event = coinmech.parse_event(COIN)
        self.assertIsInstance(event, coinmech.CoinEvent)
        self.assertTrue(event.is_money)
        self.assertEqual((event.seq, event.kind, event.currency, event.denomination, event.value_minor),
                         (59, "coin", "USD", "quarter", 25))
        self.assertEqual((event.source, event.epoch, event.device_seq, event.ref_seq, event.link, event.chain_generation),
                         ("serial", 1, 12, 57, "usd", 3))
        self.assertEqual(event.time, 1795286947.0)
        self.assertEqual(event.extra, {})
        self.assertEqual(event.raw, COIN)

    def test_decision_reject_is_not_money(self):
        event = coinmech.parse_event(REJECT)
        self.assertIsInstance(event, coinmech.DecisionEvent)
        self.assertFalse(event.accepted)
        self.assertFalse(event.is_money)
        self.assertEqual(event.reason, "too_light")

    def test_operator_event_keeps_detail(self):
        event = coinmech.parse_event(SOURCE_LOST)
        self.assertIs(type(event), coinmech.Event)
        self.assertEqual(event.detail, {"device": "/dev/coinmech0", "reason": "hang-up"})
        self.assertTrue(event.is_known_kind)

    def test_credit_event_reads_its_detail(self):
        event = coinmech.parse_event(SPENT)
        self.assertIsInstance(event, coinmech.CreditEvent)
        self.assertEqual((event.request_id, event.account, event.by, event.item), ("sale-7", "coinmech0", "kiosk", "A4"))
        self.assertEqual(event.balance_minor, 25)  # the ledger writes it as a string
        self.assertEqual(event.value_minor, 150)
        for kind in ("credit_opened", "credit_refunded", "credit_returned", "credit_expired"):
            self.assertIsInstance(coinmech.parse_event(dict(SPENT, kind=kind)), coinmech.CreditEvent)

    def test_unknown_kind_and_fields_are_a_generic_event(self):
        raw = {"seq": 900, "time": 1795287000, "kind": "laser_show", "source": "serial", "colour": "green",
               "detail": {"beams": "3"}}
        event = coinmech.parse_event(raw)
        self.assertIs(type(event), coinmech.Event)
        self.assertFalse(event.is_known_kind)
        self.assertEqual(event.extra, {"colour": "green"})
        self.assertEqual(event.time, 1795287000.0)
        self.assertIsInstance(event.time, float)
        self.assertEqual(event.detail, {"beams": "3"})

    def test_collect_rows_are_kept(self):
        raw = {"seq": 172, "time": 1.5, "kind": "collect", "detail": {"by": "root"},
               "collected": [{"currency": "USD", "denomination": "quarter", "count": 3, "value_minor": 75, "weight_g": 17.01}]}
        self.assertEqual(coinmech.parse_event(raw).collected[0]["value_minor"], 75)

    def test_not_an_event_is_a_protocol_error(self):
        for bad in ([], {"time": 1.0, "kind": "coin"}, {"seq": True, "time": 1.0, "kind": "coin"},
                    {"seq": "5", "time": 1.0, "kind": "coin"}, {"seq": 5, "kind": "coin"}, {"seq": 5, "time": 1.0}):
            with self.subTest(bad=bad), self.assertRaises(coinmech.ProtocolError):
                coinmech.parse_event(bad)

    def test_events_are_immutable_and_compare_by_value(self):
        self.assertEqual(coinmech.parse_event(COIN), coinmech.parse_event(dict(COIN)))
        with self.assertRaises(AttributeError):
            coinmech.parse_event(COIN).seq = 1  # type: ignore[misc]


class HelloTests(unittest.TestCase):
    def test_protocol_two(self):
        hello = parse_hello({"daemon": "coinmechd", "protocol": 2, "seq": 41, "type": "hello", "version": "0.5.0"})
        self.assertEqual((hello.protocol, hello.seq, hello.version), (2, 41, "0.5.0"))

    def test_another_protocol_is_refused_clearly(self):
        for protocol in (1, 3, None, "2"):
            with self.subTest(protocol=protocol), self.assertRaises(coinmech.ProtocolVersionError) as caught:
                parse_hello({"type": "hello", "protocol": protocol, "seq": 0})
            self.assertIn("this client speaks protocol 2", str(caught.exception))
            self.assertEqual(caught.exception.protocol, protocol)

    def test_not_a_hello(self):
        with self.assertRaises(coinmech.ProtocolError):
            parse_hello({"type": "event", "seq": 1})


class ResultTests(unittest.TestCase):
    def test_spend_approved(self):
        result = parse_credit_result(json.loads(
            '{"state":"approved","request_id":"sale-7","amount_minor":150,"currency":"USD","item":"A4","balance_minor":25,'
            '"seq":413,"repeated":false}'), "sale-7")
        self.assertEqual(result, coinmech.Approved(state="approved", request_id="sale-7", amount_minor=150, currency="USD",
                                                   item="A4", balance_minor=25, seq=413, repeated=False))

    def test_spend_refused_short_has_the_balance(self):
        result = parse_credit_result(json.loads(
            '{"state":"refused","reason":"credit_short","request_id":"sale-7","amount_minor":150,"currency":"USD",'
            '"balance_minor":100}'), "sale-7")
        self.assertIsInstance(result, coinmech.Refused)
        self.assertEqual((result.reason, result.balance_minor, result.amount_minor), ("credit_short", 100, 150))

    def test_refunded(self):
        result = parse_credit_result(json.loads(
            '{"state":"refunded","request_id":"sale-7","amount_minor":150,"currency":"USD","balance_minor":175,"seq":414,'
            '"repeated":true}'), "sale-7")
        self.assertIsInstance(result, coinmech.Refunded)
        self.assertTrue(result.repeated)
        self.assertEqual(result.balance_minor, 175)

    def test_cancel_returned_and_kept(self):
        returned = parse_credit_result(json.loads(
            '{"state":"returned","request_id":"esc-3","currency":"USD","kept_minor":0,"balance_minor":0,'
            '"payout":{"state":"done","paid_minor":35,"debt_minor":0,"coins":[{"coin_id":"USD25","count":1}]}}'), "esc-3")
        self.assertIsInstance(returned, coinmech.Returned)
        self.assertEqual((returned.payout.state, returned.payout.paid_minor, returned.kept_minor), ("done", 35, 0))
        kept = parse_credit_result(json.loads(
            '{"state":"kept","request_id":"esc-3","currency":"USD","balance_minor":150,'
            '"reason":"no device here pays change: the credit stays"}'), "esc-3")
        self.assertIsInstance(kept, coinmech.Kept)
        self.assertEqual(kept.balance_minor, 150)

    def test_another_request_id_is_a_protocol_error(self):
        with self.assertRaises(coinmech.ProtocolError):
            parse_credit_result({"state": "approved", "request_id": "other", "amount_minor": 1}, "mine")

    def test_unknown_state_is_a_generic_result(self):
        result = parse_credit_result({"state": "pondering", "request_id": "x"}, "x")
        self.assertIs(type(result), coinmech.CreditResult)

    def test_totals_and_credit_and_events(self):
        totals = parse_totals(json.loads(
            '{"current":[{"count":3,"currency":"USD","denomination":"quarter","value_minor":75,"weight_g":17.01}],'
            '"current_value":{"USD":75},"lifetime":[],"lifetime_value":{"USD":75}}'))
        self.assertEqual(totals.current[0].count, 3)
        self.assertEqual(totals.current_value, {"USD": 75})
        credit = parse_credit(json.loads(
            '{"source":"coinmech0","accounts":[{"account":"coinmech0","currency":"USD","balance_minor":150,"moved_seq":412}]}'))
        self.assertEqual((credit.balance("USD"), credit.balance(), credit.balance("EUR")), (150, 150, 0))
        page = parse_events_page({"events": [COIN], "last_seq": 170})
        self.assertEqual((page.last_seq, page.events[0].seq), (170, 59))


class ErrorTests(unittest.TestCase):
    def test_one_class_per_code(self):
        expected = {"bad_json": coinmech.BadJSON, "bad_request": coinmech.BadRequest,
                    "unknown_command": coinmech.UnknownCommand, "line_too_long": coinmech.LineTooLong,
                    "forbidden": coinmech.Forbidden, "unavailable": coinmech.Unavailable, "failed": coinmech.Failed}
        for code, cls in expected.items():
            error = coinmech.error_for(code, "why", "rid")
            self.assertIs(type(error), cls)
            self.assertEqual((error.code, error.message, error.request_id), (code, "why", "rid"))
            self.assertIsInstance(error, coinmech.CommandError)
        unknown = coinmech.error_for("gremlins", "why")
        self.assertIs(type(unknown), coinmech.CommandError)
        self.assertEqual(unknown.code, "gremlins")

    def test_hierarchy(self):
        self.assertTrue(issubclass(coinmech.ReplyTimeout, coinmech.ConnectionFailed))
        self.assertTrue(issubclass(coinmech.ProtocolVersionError, coinmech.ProtocolError))
        for cls in (coinmech.ConnectionFailed, coinmech.ProtocolError, coinmech.CommandError, errors.CoinMechError):
            self.assertTrue(issubclass(cls, coinmech.CoinMechError))


if __name__ == "__main__":
    unittest.main()
