/* libusrsctp peer for tests/usrsctp.rs, an independent SCTP implementation to test against.
 * usage: usrsctp_echo <udp_encapsulation_port> <sctp_port> <messages>
 *          Server: runs usrsctp over UDP encapsulation (RFC 6951) on 127.0.0.1, accepts one
 *          association, echoes every message on its stream with its PPID and U flag, and exits
 *          after <messages> messages or when the peer closes. Prints "ready" once listening,
 *          "done <n>" at the end.
 *        usrsctp_echo client <local_encaps_port> <remote_encaps_port> <sctp_port> <messages>
 *          Client: connects to 127.0.0.1:<sctp_port> through the peer's UDP port, sends
 *          <messages> messages of 1..3000 bytes on streams 0..3 with PPID = index, expects each
 *          echoed intact, closes, and prints "done <n>". */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <usrsctp.h>

static int client(int argc, char **argv) {
    if (argc != 6) return 2;
    uint16_t local = (uint16_t)atoi(argv[2]);
    uint16_t remote = (uint16_t)atoi(argv[3]);
    uint16_t port = (uint16_t)atoi(argv[4]);
    long want = atol(argv[5]);
    usrsctp_init(local, NULL, NULL);
    usrsctp_sysctl_set_sctp_no_csum_on_loopback(0);
    /* As root usrsctp also opens raw SCTP sockets in this namespace: never answer other
       tests' SCTP packets with ABORT. */
    usrsctp_sysctl_set_sctp_blackhole(2);
    struct socket *s = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (!s) { perror("usrsctp_socket"); return 1; }
    struct sctp_udpencaps enc;
    memset(&enc, 0, sizeof enc);
    enc.sue_address.ss_family = AF_INET;
    enc.sue_port = htons(remote);
    if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &enc, sizeof enc) < 0) {
        perror("encaps");
        return 1;
    }
    int on = 1;
    usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on);
    /* Without this, Nagle holds the tail fragment of each message until the peer's delayed
     * SACK (200 ms) for the head arrives: correct but slow for a ping-pong test. */
    usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on);
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (usrsctp_connect(s, (struct sockaddr *)&sin, sizeof sin) < 0) { perror("connect"); return 1; }
    static char buf[1 << 17], out[4000];
    long n = 0;
    for (long i = 0; i < want; i++) {
        size_t len = 1 + (size_t)((i * 7919) % 3000);
        for (size_t k = 0; k < len; k++) out[k] = (char)(i + k);
        struct sctp_sndinfo snd;
        memset(&snd, 0, sizeof snd);
        snd.snd_sid = (uint16_t)(i % 4);
        snd.snd_ppid = htonl((uint32_t)i);
        if (usrsctp_sendv(s, out, len, NULL, 0, &snd, sizeof snd, SCTP_SENDV_SNDINFO, 0) < 0) {
            perror("sendv");
            return 1;
        }
        struct sctp_rcvinfo rcv;
        socklen_t infolen = sizeof rcv, fromlen = sizeof sin;
        unsigned int infotype = 0;
        int flags = 0;
        ssize_t r;
        do {
            flags = 0;
            r = usrsctp_recvv(s, buf, sizeof buf, (struct sockaddr *)&sin, &fromlen, &rcv,
                              &infolen, &infotype, &flags);
        } while (r > 0 && (flags & MSG_NOTIFICATION));
        if (r <= 0) break;
        if ((size_t)r != len || memcmp(buf, out, len) != 0 || ntohl(rcv.rcv_ppid) != (uint32_t)i ||
            rcv.rcv_sid != (uint16_t)(i % 4)) {
            fprintf(stderr, "bad echo %ld\n", i);
            return 1;
        }
        n++;
    }
    printf("done %ld\n", n);
    fflush(stdout);
    usrsctp_close(s);
    while (usrsctp_finish() != 0) {
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "client") == 0) return client(argc, argv);
    if (argc != 4) return 2;
    uint16_t encaps = (uint16_t)atoi(argv[1]);
    uint16_t port = (uint16_t)atoi(argv[2]);
    long want = atol(argv[3]);
    usrsctp_init(encaps, NULL, NULL);
    /* Compute CRC32c even on loopback: the peer checks it. */
    usrsctp_sysctl_set_sctp_no_csum_on_loopback(0);
    /* As root usrsctp also opens raw SCTP sockets in this namespace: never answer other
       tests' SCTP packets with ABORT. */
    usrsctp_sysctl_set_sctp_blackhole(2);
    struct socket *l = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (!l) { perror("usrsctp_socket"); return 1; }
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (usrsctp_bind(l, (struct sockaddr *)&sin, sizeof sin) < 0) { perror("bind"); return 1; }
    if (usrsctp_listen(l, 1) < 0) { perror("listen"); return 1; }
    printf("ready\n");
    fflush(stdout);
    struct socket *s = usrsctp_accept(l, NULL, NULL);
    if (!s) { perror("accept"); return 1; }
    int on = 1;
    usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on);
    static char buf[1 << 17];
    long n = 0;
    while (n < want) {
        struct sctp_rcvinfo rcv;
        socklen_t infolen = sizeof rcv, fromlen = sizeof sin;
        unsigned int infotype = 0;
        int flags = 0;
        ssize_t r = usrsctp_recvv(s, buf, sizeof buf, (struct sockaddr *)&sin, &fromlen, &rcv,
                                  &infolen, &infotype, &flags);
        if (r <= 0) break;
        if (flags & MSG_NOTIFICATION) continue;
        if (!(flags & MSG_EOR)) { fprintf(stderr, "partial message\n"); return 1; }
        struct sctp_sndinfo snd;
        memset(&snd, 0, sizeof snd);
        snd.snd_sid = rcv.rcv_sid;
        snd.snd_ppid = rcv.rcv_ppid;
        snd.snd_flags = (rcv.rcv_flags & SCTP_UNORDERED) ? SCTP_UNORDERED : 0;
        if (usrsctp_sendv(s, buf, (size_t)r, NULL, 0, &snd, sizeof snd, SCTP_SENDV_SNDINFO, 0) < 0) {
            perror("sendv");
            return 1;
        }
        n++;
    }
    printf("done %ld\n", n);
    fflush(stdout);
    /* Let the last echoes and the peer's SHUTDOWN get through before tearing down. */
    struct sctp_rcvinfo rcv;
    socklen_t infolen = sizeof rcv, fromlen = sizeof sin;
    unsigned int infotype = 0;
    int flags = 0;
    while (usrsctp_recvv(s, buf, sizeof buf, (struct sockaddr *)&sin, &fromlen, &rcv, &infolen,
                         &infotype, &flags) > 0) {
    }
    usrsctp_close(s);
    usrsctp_close(l);
    while (usrsctp_finish() != 0) {
    }
    return 0;
}
