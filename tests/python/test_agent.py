"""The package against a running cluster: CUTSNAP_TEST_CONFIG names its
config, whose agents A and B run (tests/e2e/t0660-python.sh starts it)."""

import os
import unittest

import cutsnap

CONF = os.environ.get("CUTSNAP_TEST_CONFIG")


@unittest.skipIf(CONF is None, "CUTSNAP_TEST_CONFIG is not set")
class Agent(unittest.TestCase):
    def setUp(self):
        self.c = cutsnap.connect(CONF, "A")
        self.addCleanup(self.c.close)

    def test_keys(self):
        c = self.c
        self.assertIsNone(c.put("k", "v"))
        self.assertEqual(c.get("k"), b"v")
        c.put(b"bin\x00", bytes(range(256)) * 1000)
        self.assertEqual(c.get(b"bin\x00"), bytes(range(256)) * 1000)
        self.assertIsNone(c.get("never-written"))
        self.assertEqual(c.add("n", 5), 5)
        self.assertEqual(c.add("n", -7), -2)
        self.assertTrue(c.delete("k"))
        self.assertFalse(c.delete("k"))
        self.assertIsNone(c.get("k"))

    def test_other_connection_sees_writes(self):
        self.c.put("shared", "1")
        with cutsnap.connect(CONF, "A") as c2:
            self.assertEqual(c2.get("shared"), b"1")
        with cutsnap.connect(CONF, "B") as cb:
            self.assertIsNone(cb.get("shared"))

    def test_status(self):
        st = self.c.status()
        self.assertGreater(st["pid"], 0)
        self.assertEqual(st["pid"], st.get("pid"))
        self.assertIn("records", st)
        self.assertIn("out=", st["text"])

    def test_add_to_a_text_value_fails_cleanly(self):
        self.c.put("text", "abc")
        with self.assertRaises(cutsnap.Error) as cm:
            self.c.add("text", 1)
        self.assertEqual(len(str(cm.exception).splitlines()), 1)
        self.assertEqual(self.c.get("text"), b"abc")   # still usable

    def test_transaction_applies_everything(self):
        c = self.c
        c.put("t.old", "x")
        with c.transaction() as t:
            t.expect("t.old", "x").expect("t.absent", None)
            t.put("t.new", "y").delete("t.old")
            t.add("t.n", 3).add("t.n", 4)
        self.assertEqual(t.results, [3, 7])
        self.assertEqual((c.get("t.new"), c.get("t.old"), c.get("t.n")),
                         (b"y", None, b"7"))

    def test_failed_condition_changes_nothing(self):
        c = self.c
        c.put("f.k", "1")
        with self.assertRaises(cutsnap.Conflict) as cm:
            with c.transaction() as t:
                t.put("f.other", "written?")
                t.add("f.n", 1)
                t.expect("f.k", "2")
        self.assertEqual(cm.exception.op_index, 2)
        self.assertIsNone(c.get("f.other"))
        self.assertIsNone(c.get("f.n"))
        with self.assertRaises(cutsnap.Conflict):
            c.commit(c.transaction().expect("f.k", None))

    def test_versions(self):
        c = self.c
        self.assertEqual(c.get_version("v.k"), (0, None))
        c.put("v.k", "a")
        ver, val = c.get_version("v.k")
        self.assertEqual(val, b"a")
        self.assertGreater(ver, 0)
        with c.transaction() as t:
            t.expect_version("v.k", ver).put("v.k", "b")
        ver2, _ = c.get_version("v.k")
        self.assertGreater(ver2, ver)
        with self.assertRaises(cutsnap.Conflict):
            with c.transaction() as t:
                t.expect_version("v.k", ver).put("v.k", "lost update")
        self.assertEqual(c.get("v.k"), b"b")

    def test_unknown_agent_and_stopped_agent(self):
        with self.assertRaises(cutsnap.Error) as cm:
            cutsnap.connect(CONF, "nobody")
        self.assertIn("nobody", str(cm.exception))

    def test_connect_path(self):
        run = os.path.join(os.path.dirname(os.path.abspath(CONF)), "run")
        with cutsnap.connect_path(os.path.join(run, "B.sock")) as c:
            c.put("by-path", "1")
        with cutsnap.connect(CONF, "B") as c:
            self.assertEqual(c.get("by-path"), b"1")


if __name__ == "__main__":
    unittest.main()
