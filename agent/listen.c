/* listen.c - the agent's Unix socket: private directory, stale socket
 * detection, accept with a same-uid check. */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../lib/fsutil.h"
#include "../lib/log.h"
#include "../net/xport.h"
#include "agent_int.h"

static int
run_dir_open(const char *dir, struct cs_err *e)
{
	struct stat st;

	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return cs_errf(e, "run_dir %s is not a directory", dir);
		if (st.st_uid != getuid())
			return cs_errf(e, "run_dir %s belongs to uid %d; use "
			    "a directory of your own", dir, (int)st.st_uid);
		if (st.st_mode & S_ISVTX)
			return cs_errf(e, "run_dir %s is a shared directory; "
			    "use a directory of your own", dir);
		/* The sockets' directory is what keeps other users out;
		 * tighten one that was made too open. */
		if ((st.st_mode & 077) != 0) {
			log_info("run_dir %s had mode %03o; setting 0700", dir,
			    (unsigned)(st.st_mode & 0777));
			if (chmod(dir, 0700) == -1)
				return cs_errno(e, "chmod %s", dir);
		}
		return 0;
	}
	if (errno != ENOENT)
		return cs_errno(e, "stat %s", dir);
	if (fs_mkdir_p(dir, 0700, e) == -1)
		return -1;
	/* mkdir honours the umask; the sockets' directory must be ours. */
	if (chmod(dir, 0700) == -1)
		return cs_errno(e, "chmod %s", dir);
	return 0;
}

/* 1 if something answers on the socket at path, 0 if it is stale
 * (ECONNREFUSED), -1 with e set for anything else. */
static int
sock_alive(const struct sockaddr_un *sun, struct cs_err *e)
{
	int fd, rc;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return cs_errno(e, "socket");
	while ((rc = connect(fd, (const struct sockaddr *)sun,
	    sizeof(*sun))) == -1 && errno == EINTR)
		;
	if (rc == 0)
		rc = 1;
	else if (errno == ECONNREFUSED)
		rc = 0;
	else
		rc = cs_errno(e, "connect %s", sun->sun_path);
	close(fd);
	return rc;
}

int
agent_listen_open(struct agent *a, struct cs_err *e)
{
	const char *path = a->c->agents[a->self].sock;
	struct sockaddr_un sun;
	struct stat st;
	int fd = -1, alive;

	if (a->c->agents[a->self].addr[0] != '\0') {
		if ((fd = xport_tcp_listen(a->c->agents[a->self].addr, e)) ==
		    -1)
			goto fail;
		a->lfd = fd;
		a->tcp = 1;
		a->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return 0;
	}
	if (run_dir_open(a->c->run_dir, e) == -1)
		goto fail;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		cs_errf(e, "socket path %s is too long", path);
		goto fail;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		cs_errno(e, "socket");
		goto fail;
	}
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		if (errno != EADDRINUSE) {
			cs_errno(e, "bind %s", path);
			goto fail;
		}
		if ((alive = sock_alive(&sun, e)) == -1)
			goto fail;
		if (alive) {
			cs_errf(e, "agent %s already running (%s answers)",
			    a->name, path);
			goto fail;
		}
		if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
			cs_errf(e, "%s exists and is not a socket; remove it",
			    path);
			goto fail;
		}
		log_info("removing stale socket %s", path);
		if (unlink(path) == -1 && errno != ENOENT) {
			cs_errno(e, "unlink stale socket %s", path);
			goto fail;
		}
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
			cs_errno(e, "bind %s", path);
			goto fail;
		}
	}
	a->bound = 1;
	if (lstat(path, &st) == 0)
		a->sock_ino = st.st_ino;
	a->lfd = fd;
	if (chmod(path, 0600) == -1) {
		cs_errno(e, "chmod %s", path);
		goto fail;
	}
	if (listen(fd, SOMAXCONN) == -1) {
		cs_errno(e, "listen %s", path);
		goto fail;
	}
	/* Held in reserve so that EMFILE can still be answered by accepting
	 * and closing, instead of spinning on a readable listener. */
	a->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return 0;
fail:
	if (a->lfd == -1 && fd != -1)
		close(fd);
	agent_listen_close(a);
	return -1;
}

void
agent_listen_close(struct agent *a)
{
	const char *path = a->c->agents[a->self].sock;
	struct stat st;

	if (a->lfd != -1) {
		close(a->lfd);
		a->lfd = -1;
	}
	if (a->spare != -1) {
		close(a->spare);
		a->spare = -1;
	}
	/* Unlink only our own socket, not one a successor already bound. */
	if (a->bound && lstat(path, &st) == 0 && st.st_ino == a->sock_ino)
		unlink(path);
	a->bound = 0;
}

/* Out of descriptors: 1 if one was freed by closing the oldest
 * connection that has not authenticated (accept again), else 0 (the
 * next connection was accepted with the reserve descriptor and closed,
 * so that the listener does not stay readable for nothing). */
static int
accept_emfile(struct agent *a)
{
	int fd;

	if (agent_admit_evict_oldest(a, "out of file descriptors") == 0)
		return 1;
	if (a->spare == -1)
		return 0;
	close(a->spare);
	if ((fd = accept(a->lfd, NULL, NULL)) != -1)
		close(fd);
	a->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	agent_admit_log(a, "out of file descriptors: refused a connection");
	return 0;
}

void
agent_listen_accept(struct agent *a)
{
	struct ucred cred;
	struct conn *c;
	socklen_t clen;
	int fd, i, one = 1;

	for (i = 0; i < 64; i++) {
		fd = accept4(a->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE) {
				if (accept_emfile(a))
					continue;
			} else if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warn("accept: %s", strerror(errno));
			return;
		}
		if (a->tcp) {
			/* TCP: who it is is settled by the TLS handshake,
			 * before a byte of the protocol is read. Frames
			 * leave at once, as they do on a Unix socket. */
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
			    sizeof(one));
			if ((c = agent_conn_new(a, fd, ROLE_NEW, 0)) == NULL)
				continue;
			agent_admit(a, c);
			(void)agent_conn_tls(a, c, 1);
			continue;
		}
		memset(&cred, 0, sizeof(cred));
		clen = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) ==
		    -1 || cred.uid != getuid()) {
			log_warn("refused a connection from uid %d (pid %d): "
			    "only uid %d may connect", (int)cred.uid,
			    (int)cred.pid, (int)getuid());
			close(fd);
			continue;
		}
		agent_conn_new(a, fd, ROLE_NEW, 0);
	}
}
