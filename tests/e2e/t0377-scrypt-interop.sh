#!/bin/bash
# The key an encrypted repository's password derives is scrypt's (RFC
# 7914) whatever code computes it: Python's hashlib.scrypt and the
# cryptography package, given the key row cutsnap wrote with the default
# cost (N=2^16, r=8, p=1), open the sealed master key, and the row's MAC
# checks under it; a key row they make (N=2^12, r=8, p=2: another shape)
# opens the repository for cutsnap, whose verify passes and whose restore
# gives the files back byte for byte; a wrong password is still refused.
. "$(dirname "$0")/lib.sh"
test_require PY_CRYPTOGRAPHY

unset CUTSNAP_SCRYPT_N CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE \
    CUTSNAP_NEW_PASSWORD CUTSNAP_NEW_PASSWORD_FILE
export CUTSNAP_CHUNK_SIZE=65536

# keyrow.py open DB PASSWORD: opens key row 1 of DB with PASSWORD through
# hashlib.scrypt and AES-GCM, checks the row's MAC with the master key it
# opened (in either domain, store/rowauth.c); prints "N R P". keyrow.py
# add DB PASSWORD N R P: a new key row for PASSWORD sealing the same
# master key (opened with the password in $PW1), its MAC in row 1's
# domain, as store/crypt.c lays it out; prints its id.
cat >keyrow.py <<'EOF'
import hashlib, hmac, os, sqlite3, struct, sys
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

db = sqlite3.connect(sys.argv[2])
rid = bytes.fromhex(db.execute("select id from repository").fetchone()[0])

def kek(pw, salt, n, r, p):
    return hashlib.scrypt(pw.encode(), salt=salt, n=n, r=r, p=p,
                          maxmem=512 << 20, dklen=32)

def aad(salt):
    return b"cutsnap-key-1\0" + rid + salt

# Domain 2: the repository's snapshot rows all carry their MAC.
def row_mac(master, n, r, p, salt, sealed, domain):
    k = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
             info=b"cutsnap keys 1").derive(master)
    msg = (b"cutsnap-keyrow-%d\0" % domain + rid +
           struct.pack("<QQQ", n, r, p) + salt + sealed)
    return hmac.new(k, msg, hashlib.sha256).digest()

def open_row(pw, rowid):
    n, r, p, salt, sealed, mac = db.execute(
        "select n, r, p, salt, sealed, mac from repo_keys where id = ?",
        (rowid,)).fetchone()
    master = AESGCM(kek(pw, salt, n, r, p)).decrypt(sealed[:12], sealed[12:],
                                                    aad(salt))
    for domain in (1, 2):
        if (len(master) == 32 and
                row_mac(master, n, r, p, salt, sealed, domain) == mac):
            return master, (n, r, p), domain
    sys.exit("key row %d: the MAC does not check" % rowid)

if sys.argv[1] == "open":
    master, nrp, _ = open_row(sys.argv[3], 1)
    print("%d %d %d" % nrp)
else:
    master, _, domain = open_row(os.environ["PW1"], 1)
    n, r, p = (int(v) for v in sys.argv[4:7])
    salt = os.urandom(32)
    nonce = os.urandom(12)
    sealed = nonce + AESGCM(kek(sys.argv[3], salt, n, r, p)).encrypt(
        nonce, master, aad(salt))
    cur = db.execute(
        "insert into repo_keys(created, kdf, n, r, p, salt, sealed, mac) "
        "values ('2026-12-02T00:00:00Z', 'scrypt', ?, ?, ?, ?, ?, ?)",
        (n, r, p, salt, sealed,
         row_mac(master, n, r, p, salt, sealed, domain)))
    db.commit()
    print(cur.lastrowid)
EOF

test_expect_success 'a snapshot into a repository made with the default scrypt cost' '
	make_config A B &&
	printf "%s\n" "correct horse" >pw &&
	printf "%s\n" "python horse" >pwpy &&
	printf "%s\n" "wrong horse" >bad &&
	expect_ok init -r "$REPO" --encrypt --password-file pw &&
	start_cluster &&
	put_random A 40 && put_random B 10 &&
	head -c 200000 /dev/urandom >big && cs put -c "$CONF" A big - <big &&
	take_snapshot --password-file pw &&
	stop_cluster &&
	cp A.data A.want && cp B.data B.want &&
	expect_ok key -r "$REPO" list --json &&
	json_check "len(d) == 1 and (d[0][\"n\"], d[0][\"r\"], d[0][\"p\"]) == (65536, 8, 1)"
'

test_expect_success 'hashlib.scrypt of the password opens the master key cutsnap sealed' '
	expect_eq "$(python3 keyrow.py open "$REPO/manifest.db" "correct horse")" \
	    "65536 8 1" "the row opened by another scrypt"
'

test_expect_success 'and not with another password (the tag does not check)' '
	! python3 keyrow.py open "$REPO/manifest.db" "wrong horse" 2>pyerr &&
	grep -q InvalidTag pyerr
'

test_expect_success 'a key row that hashlib.scrypt derived opens the repository for cutsnap' '
	expect_eq "$(PW1="correct horse" python3 keyrow.py add "$REPO/manifest.db" \
	    "python horse" 4096 8 2)" 2 "the new row id" &&
	expect_ok key -r "$REPO" list --json &&
	json_check "len(d) == 2 and (d[1][\"n\"], d[1][\"r\"], d[1][\"p\"]) == (4096, 8, 2)" &&
	expect_ok verify -r "$REPO" --password-file pwpy --json &&
	json_check "d[\"ok\"] is True" &&
	expect_ok verify -r "$REPO" --password-file pw
'

test_expect_success 'restore with that password: the files byte for byte' '
	rm -f A.data B.data &&
	expect_ok restore -r "$REPO" -c "$CONF" --password-file pwpy &&
	cmp A.data A.want && cmp B.data B.want
'

test_expect_success 'a wrong password is refused' '
	expect_error 12 verify -r "$REPO" --password-file bad &&
	err_matches "wrong password"
'

test_done
