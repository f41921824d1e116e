/* sdnotify.c - telling systemd how the agent is doing (sd_notify(3)):
 * READY=1 once it accepts connections, WATCHDOG=1 from its event loop,
 * STOPPING=1 when it shuts down.
 *
 * libsystemd is loaded with dlopen, and only when systemd asked for
 * notifications (NOTIFY_SOCKET is set): linked, it would add six
 * libraries (liblzma, liblz4, libcap, libgcrypt, ...) to the start of
 * every command, about 40% more time in the dynamic loader, for the one
 * that runs under systemd. */
#include <dlfcn.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>

#include "../lib/log.h"
#include "agent_int.h"

/* The soname of Debian's libsystemd0, which libsystemd-dev builds
 * against. */
#define SD_SONAME "libsystemd.so.0"

static __typeof__(sd_notify) *fn_notify;
static __typeof__(sd_watchdog_enabled) *fn_watchdog_enabled;

/* Without NOTIFY_SOCKET nobody listens: nothing is loaded. A library
 * that is missing is logged once; the agent runs on (under Type=notify
 * systemd then gives up waiting for READY=1 and says so). */
void
agent_sd_init(struct agent *a)
{
	uint64_t usec = 0;
	void *h;

	a->sd_on = 0;
	a->wd_ms = 0;
	if (getenv("NOTIFY_SOCKET") == NULL)
		return;
	if ((h = dlopen(SD_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		log_error("NOTIFY_SOCKET is set but %s cannot be loaded (%s): "
		    "no notifications to systemd", SD_SONAME, dlerror());
		return;
	}
	fn_notify = (__typeof__(fn_notify))dlsym(h, "sd_notify");
	fn_watchdog_enabled = (__typeof__(fn_watchdog_enabled))dlsym(h,
	    "sd_watchdog_enabled");
	if (fn_notify == NULL || fn_watchdog_enabled == NULL) {
		log_error("%s has no sd_notify: no notifications to systemd",
		    SD_SONAME);
		return;		/* h stays open: harmless, and rare */
	}
	a->sd_on = 1;
	/* WatchdogSec=: ping at half the interval, as sd_watchdog_enabled(3)
	 * advises, so one slow loop turn does not get the agent killed. */
	if (fn_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		a->wd_ms = (int64_t)(usec / 2000);
		if (a->wd_ms < 1)
			a->wd_ms = 1;
		log_info("systemd watchdog: every %lld ms",
		    (long long)a->wd_ms);
	}
}

void
agent_sd_notify(struct agent *a, const char *state)
{
	int r;

	if (!a->sd_on)
		return;
	if ((r = fn_notify(0, state)) < 0)
		log_warn("sd_notify(%s): error %d", state, -r);
}

int
agent_sd_watchdog(struct agent *a, int64_t now)
{
	int64_t left;

	if (!a->sd_on || a->wd_ms == 0)
		return -1;
	if (now >= a->wd_next) {
		agent_sd_notify(a, "WATCHDOG=1");
		a->wd_next = now + a->wd_ms;
	}
	left = a->wd_next - now;
	return left > 86400000 ? 86400000 : (int)left;
}
