/*
 * usrsctp_ngap: an independent SCTP peer (Debian's libusrsctp) for interop tests of
 * steer5g's user-space SCTP. It speaks one NGAP exchange and reports what it got.
 *
 * Client (plays the gNB; connects, sends HEXPDU, prints the first message received):
 *   usrsctp_ngap udp LOCAL_UDP_PORT REMOTE_IP REMOTE_UDP_PORT SCTP_PORT HEXPDU
 *   usrsctp_ngap raw -              REMOTE_IP -               SCTP_PORT HEXPDU
 * Server (plays the AMF; accepts one association, prints the first message received,
 * answers it with HEXPDU, waits for the peer to close):
 *   usrsctp_ngap serve-udp LOCAL_UDP_PORT BIND_IP SCTP_PORT HEXPDU
 *   usrsctp_ngap serve-raw -              BIND_IP SCTP_PORT HEXPDU
 *
 * Output on success (stdout, one line):  RECV sid=S ppid=P len=N hex=...
 * Exit codes: 0 ok, 1 runtime failure, 2 bad usage, 4 timeout.
 * Timeout: 10 s, or USRSCTP_NGAP_TIMEOUT seconds.
 *
 * Raw mode: usrsctp opens a raw IP protocol 132 socket that sees every SCTP packet of its
 * network namespace, so run it in a namespace other than the SCTP stack under test.
 *
 * Build: cc -O2 -Wall -o usrsctp_ngap usrsctp_ngap.c -lusrsctp -lpthread
 */
#include <usrsctp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* TS 38.412 §7: NGAP is carried with SCTP payload protocol identifier 60. */
#define PPID_NGAP 60
#define MAX_PDU 65536

static void on_alarm(int sig) {
    (void)sig;
    /* Only async-signal-safe calls here. */
    static const char msg[] = "usrsctp_ngap: timeout\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(4);
}

static void usage(void) {
    fprintf(stderr,
            "usage: usrsctp_ngap udp LOCAL_UDP_PORT REMOTE_IP REMOTE_UDP_PORT SCTP_PORT HEXPDU\n"
            "       usrsctp_ngap raw - REMOTE_IP - SCTP_PORT HEXPDU\n"
            "       usrsctp_ngap serve-udp LOCAL_UDP_PORT BIND_IP SCTP_PORT HEXPDU\n"
            "       usrsctp_ngap serve-raw - BIND_IP SCTP_PORT HEXPDU\n");
    exit(2);
}

static int parse_port(const char *s, uint16_t *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > 65535)
        return -1;
    *out = (uint16_t)v;
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Returns the decoded length, or -1 on odd length / non-hex / too long. */
static long parse_hex(const char *s, unsigned char *out, size_t cap) {
    size_t n = strlen(s);
    if (n % 2 != 0 || n / 2 > cap) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

/* Reads one whole message (until MSG_EOR), skipping notifications.
 * Returns its length, 0 when the peer closed, -1 on error. */
static ssize_t recv_message(struct socket *s, unsigned char *buf, size_t cap,
                            struct sctp_rcvinfo *info) {
    size_t got = 0;
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fromlen = sizeof from;
        struct sctp_rcvinfo ri;
        socklen_t ilen = sizeof ri;
        unsigned int itype = 0;
        int flags = 0;
        memset(&ri, 0, sizeof ri);
        if (got >= cap) {
            fprintf(stderr, "usrsctp_ngap: message larger than %zu bytes\n", cap);
            return -1;
        }
        ssize_t n = usrsctp_recvv(s, buf + got, cap - got, (struct sockaddr *)&from, &fromlen,
                                  &ri, &ilen, &itype, &flags);
        if (n < 0) {
            perror("usrsctp_ngap: recvv");
            return -1;
        }
        if (n == 0) return 0; /* the peer shut the association down */
        if (flags & MSG_NOTIFICATION) continue;
        if (got == 0 && itype == SCTP_RECVV_RCVINFO) *info = ri;
        got += (size_t)n;
        if (flags & MSG_EOR) return (ssize_t)got;
    }
}

static void print_recv(const struct sctp_rcvinfo *ri, const unsigned char *buf, size_t n) {
    printf("RECV sid=%u ppid=%u len=%zu hex=", ri->rcv_sid, ntohl(ri->rcv_ppid), n);
    for (size_t i = 0; i < n; i++) printf("%02x", buf[i]);
    printf("\n");
    fflush(stdout);
}

static int send_pdu(struct socket *s, const unsigned char *pdu, size_t len, uint16_t sid) {
    struct sctp_sndinfo si;
    memset(&si, 0, sizeof si);
    si.snd_sid = sid;
    /* The PPID travels in network byte order (RFC 6458 §5.3.4). */
    si.snd_ppid = htonl(PPID_NGAP);
    if (usrsctp_sendv(s, pdu, len, NULL, 0, &si, sizeof si, SCTP_SENDV_SNDINFO, 0) < 0) {
        perror("usrsctp_ngap: sendv");
        return -1;
    }
    return 0;
}

static int set_encaps(struct socket *s, uint16_t remote_udp_port) {
    struct sctp_udpencaps e;
    memset(&e, 0, sizeof e);
    e.sue_address.ss_family = AF_INET;
    e.sue_port = htons(remote_udp_port);
    if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &e, sizeof e) < 0) {
        perror("usrsctp_ngap: SCTP_REMOTE_UDP_ENCAPS_PORT");
        return -1;
    }
    return 0;
}

static void finish(void) {
    /* usrsctp_finish fails while associations still run their SHUTDOWN; give them 3 s. */
    for (int i = 0; i < 30; i++) {
        if (usrsctp_finish() == 0) return;
        usleep(100 * 1000);
    }
    fprintf(stderr, "usrsctp_ngap: usrsctp_finish did not complete\n");
}

int main(int argc, char **argv) {
    if (argc < 2) usage();
    const char *mode = argv[1];
    int server = 0, udp = 0;
    if (!strcmp(mode, "udp")) udp = 1;
    else if (!strcmp(mode, "raw")) udp = 0;
    else if (!strcmp(mode, "serve-udp")) server = 1, udp = 1;
    else if (!strcmp(mode, "serve-raw")) server = 1, udp = 0;
    else usage();
    if (argc != (server ? 6 : 7)) usage();

    uint16_t local_udp = 0, remote_udp = 0, sctp_port = 0;
    const char *ip = argv[3];
    const char *hex = server ? argv[5] : argv[6];
    if (udp && (parse_port(argv[2], &local_udp) < 0 || local_udp == 0)) usage();
    if (!server && udp && (parse_port(argv[4], &remote_udp) < 0 || remote_udp == 0)) usage();
    if (parse_port(server ? argv[4] : argv[5], &sctp_port) < 0 || sctp_port == 0) usage();
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(sctp_port);
    if (inet_pton(AF_INET, ip, &addr.sin_addr) != 1) usage();
    static unsigned char pdu[MAX_PDU];
    long pdu_len = parse_hex(hex, pdu, sizeof pdu);
    if (pdu_len <= 0) {
        fprintf(stderr, "usrsctp_ngap: HEXPDU must be non-empty hex\n");
        return 2;
    }

    unsigned timeout = 10;
    const char *t = getenv("USRSCTP_NGAP_TIMEOUT");
    if (t && atoi(t) > 0) timeout = (unsigned)atoi(t);
    signal(SIGALRM, on_alarm);
    alarm(timeout);

    /* Port 0 = no UDP encapsulation socket: native SCTP over raw IP only. */
    usrsctp_init(udp ? local_udp : 0, NULL, NULL);
    /* Answer nothing to packets of associations that are not ours: in a shared namespace
     * another SCTP stack's traffic must not be ABORTed by us. */
    usrsctp_sysctl_set_sctp_blackhole(2);
    /* Always compute CRC32c, so captures on lo show real checksums. */
    usrsctp_sysctl_set_sctp_no_csum_on_loopback(0);

    struct socket *s = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (!s) {
        perror("usrsctp_ngap: usrsctp_socket");
        return 1;
    }
    int on = 1;
    if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on) < 0) {
        perror("usrsctp_ngap: SCTP_RECVRCVINFO");
        return 1;
    }

    static unsigned char buf[MAX_PDU];
    struct sctp_rcvinfo ri;
    memset(&ri, 0, sizeof ri);
    int rc = 1;
    if (server) {
        if (usrsctp_bind(s, (struct sockaddr *)&addr, sizeof addr) < 0) {
            perror("usrsctp_ngap: bind");
            return 1;
        }
        if (usrsctp_listen(s, 1) < 0) {
            perror("usrsctp_ngap: listen");
            return 1;
        }
        fprintf(stderr, "usrsctp_ngap: listening\n");
        struct socket *c = usrsctp_accept(s, NULL, NULL);
        if (!c) {
            perror("usrsctp_ngap: accept");
            return 1;
        }
        ssize_t n = recv_message(c, buf, sizeof buf, &ri);
        if (n == 0) fprintf(stderr, "usrsctp_ngap: peer closed before sending a message\n");
        if (n > 0) {
            print_recv(&ri, buf, (size_t)n);
            if (send_pdu(c, pdu, (size_t)pdu_len, ri.rcv_sid) == 0) {
                /* Wait for the peer's SHUTDOWN: recv returns 0 then. */
                ssize_t m;
                do {
                    m = recv_message(c, buf, sizeof buf, &ri);
                } while (m > 0);
                rc = 0;
            }
        }
        usrsctp_close(c);
    } else {
        if (udp && set_encaps(s, remote_udp) < 0) return 1;
        if (usrsctp_connect(s, (struct sockaddr *)&addr, sizeof addr) < 0) {
            perror("usrsctp_ngap: connect");
            return 1;
        }
        if (send_pdu(s, pdu, (size_t)pdu_len, 0) == 0) {
            ssize_t n = recv_message(s, buf, sizeof buf, &ri);
            if (n == 0) fprintf(stderr, "usrsctp_ngap: peer closed before sending a message\n");
            if (n > 0) {
                print_recv(&ri, buf, (size_t)n);
                rc = 0;
            }
        }
        usrsctp_shutdown(s, SHUT_RDWR);
    }
    usrsctp_close(s);
    finish();
    return rc;
}
