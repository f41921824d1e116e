/* key.c - the --key FILE option: load an HMAC key into the store, and the
 * note printed when an authenticated snapshot is used without its key. */
#include <stdint.h>
#include <stdlib.h>

#include "../crypto/mac.h"
#include "../store/store.h"
#include "cmd.h"

int
cmd_key_set(struct store *st, const char *path)
{
	struct cs_err e;
	uint8_t *key = NULL;
	size_t klen = 0;
	int rc;

	if (path == NULL)
		return 0;
	if (mac_key_load(path, &key, &klen, &e) < 0)
		return cmd_fail(EXIT_USAGE, "%s", e.msg);
	rc = store_set_key(st, key, klen, &e) < 0 ?
	    cmd_fail(EXIT_USAGE, "%s", e.msg) : 0;
	mac_key_free(key, klen);
	return rc;
}

void
cmd_key_note(struct store *st, uint64_t id, const char *path)
{
	struct cs_err e;
	int keyed = 0;

	if (path != NULL || id == 0 ||
	    store_snapshot_keyed(st, id, &keyed, &e) < 0 || !keyed)
		return;
	cmd_warn("warning: snapshot %llu is authenticated (hmac-sha256) and "
	    "its tag was not checked; pass --key FILE to check it",
	    (unsigned long long)id);
}
