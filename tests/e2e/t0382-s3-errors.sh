#!/bin/bash
# Object-store failures the user must fix are reported at once, in one
# line, before any snapshot work: a wrong secret, an unknown key, a
# wrong secret (exit 12), missing bucket (exit 10), no credentials (exit 2), an endpoint nobody listens on
# (exit 1). CS_TIMEOUT bounds every command, so a retry loop or a hang
# would fail these cases rather than stall them.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

export CS_TIMEOUT=15

test_expect_success 'a cluster and a repository in the bucket' '
	make_config A B &&
	start_cluster &&
	set_balances A=10 B=20 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL"
'

test_expect_success 'a wrong secret: access denied, exit 12 (auth), nothing written' '
	before=$(s3keys "$BUCKET" repo/ | sort) &&
	AWS_SECRET_ACCESS_KEY=wrong-secret expect_error 12 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "access denied \(SignatureDoesNotMatch\): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" &&
	AWS_SECRET_ACCESS_KEY=wrong-secret expect_error 12 ls -r "$REPO_URL" &&
	err_matches "access denied" &&
	AWS_SECRET_ACCESS_KEY=wrong-secret expect_error 12 verify -r "$REPO_URL" &&
	err_matches "access denied" &&
	expect_eq "$(s3keys "$BUCKET" repo/ | sort)" "$before" "objects after the refused commands" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 1"
'

test_expect_success 'an unknown access key: access denied, exit 12 (auth)' '
	AWS_ACCESS_KEY_ID=NOSUCHKEY expect_error 12 restore -c "$CONF" -r "$REPO_URL" &&
	err_matches "access denied \(InvalidAccessKeyId\)"
'

test_expect_success 'a missing bucket: named, exit 10 (no repository), for readers and writers' '
	expect_error 10 snapshot -c "$CONF" -r "s3://no-such-bucket-$$/repo" &&
	err_matches "bucket no-such-bucket-$$ does not exist" &&
	expect_error 10 ls -r "s3://no-such-bucket-$$/repo" &&
	err_matches "bucket no-such-bucket-$$ does not exist" &&
	expect_error 10 prune -r "s3://no-such-bucket-$$" &&
	err_matches "does not exist"
'

test_expect_success 'no credentials: exit 2 naming the variables' '
	(unset AWS_ACCESS_KEY_ID; cs ls -r "$REPO_URL") >"$OUT" 2>"$ERR"
	expect_eq "$?" 2 "exit status" &&
	err_is_one_line &&
	err_matches "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
'

test_expect_success 'an endpoint nobody listens on: exit 1 in one line' '
	port=$(python3 -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])") &&
	AWS_ENDPOINT_URL=http://127.0.0.1:$port expect_error 1 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "127.0.0.1:$port.*(connect|Couldn)" &&
	AWS_ENDPOINT_URL=http://127.0.0.1:$port expect_error 1 ls -r "$REPO_URL" &&
	AWS_ENDPOINT_URL=ftp://127.0.0.1:$port expect_error 2 ls -r "$REPO_URL" &&
	err_matches "must start with http:// or https://"
'

test_expect_success 'commands that take no object store say so' '
	expect_error 2 snapshot -c "$CONF" -r "gs://bucket/x" &&
	err_matches "only s3:// object stores are supported"
'

test_done
