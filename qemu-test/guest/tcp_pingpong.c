// SPDX-License-Identifier: GPL-2.0
/*
 * TCP request/response latency, the sockets analogue of ib_*_lat; the same
 * protocol, arguments and output as tcp_pingpong.py, without an
 * interpreter's cost in every round trip:
 *
 *   tcp_pingpong server PORT
 *   tcp_pingpong client HOST PORT REQ_BYTES RESP_BYTES ITERS
 *
 * scripts/bench builds it (cc -O2) into build/bench/; qemu-test/guest/bench.sh
 * falls back to the Python one when it is not there.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void recv_exact(int s, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = recv(s, buf + got, n - got, 0);

		if (k <= 0) {
			fprintf(stderr, "recv: %s\n", k ? "error" : "peer closed");
			exit(1);
		}
		got += (size_t)k;
	}
}

static void send_all(int s, const char *buf, size_t n)
{
	size_t sent = 0;

	while (sent < n) {
		ssize_t k = send(s, buf + sent, n - sent, 0);

		if (k <= 0)
			die("send");
		sent += (size_t)k;
	}
}

static void nodelay(int s)
{
	int one = 1;

	if (setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("TCP_NODELAY");
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void server(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint32_t hdr[3], req, resp, rounds;
	int ls, s, one = 1;
	char *rbuf, *out;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1))
		die("bind/listen");
	s = accept(ls, NULL, NULL);
	if (s < 0)
		die("accept");
	nodelay(s);
	recv_exact(s, (char *)hdr, sizeof(hdr));
	req = ntohl(hdr[0]);
	resp = ntohl(hdr[1]);
	rounds = ntohl(hdr[2]);
	rbuf = calloc(1, req ? req : 1);
	out = calloc(1, resp ? resp : 1);
	if (!rbuf || !out)
		die("calloc");
	for (uint32_t i = 0; i < rounds; i++) {
		recv_exact(s, rbuf, req);
		send_all(s, out, resp);
	}
	close(s);
	close(ls);
}

static void client(const char *host, const char *port, uint32_t req, uint32_t resp, uint32_t iters)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	uint32_t warm = iters / 10 > 10 ? iters / 10 : 10, hdr[3];
	uint64_t *rtt, sum = 0;
	char *rbuf, *out;
	int s;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo");
	s = socket(ai->ai_family, ai->ai_socktype, 0);
	if (s < 0 || connect(s, ai->ai_addr, ai->ai_addrlen))
		die("connect");
	nodelay(s);
	hdr[0] = htonl(req);
	hdr[1] = htonl(resp);
	hdr[2] = htonl(warm + iters);
	send_all(s, (const char *)hdr, sizeof(hdr));
	rbuf = calloc(1, resp ? resp : 1);
	out = calloc(1, req ? req : 1);
	rtt = calloc(iters, sizeof(*rtt));
	if (!rbuf || !out || !rtt)
		die("calloc");
	for (uint32_t i = 0; i < warm + iters; i++) {
		uint64_t t0 = now_ns();

		send_all(s, out, req);
		recv_exact(s, rbuf, resp);
		if (i >= warm)
			rtt[i - warm] = now_ns() - t0;
	}
	close(s);
	qsort(rtt, iters, sizeof(*rtt), cmp_u64);
	for (uint32_t i = 0; i < iters; i++)
		sum += rtt[i];
	printf("{\"req_bytes\": %u, \"resp_bytes\": %u, \"iters\": %u, \"rtt_min_us\": %.2f, "
	       "\"rtt_typical_us\": %.2f, \"rtt_avg_us\": %.2f, \"rtt_p99_us\": %.2f}\n",
	       req, resp, iters, rtt[0] / 1000.0, rtt[iters / 2] / 1000.0,
	       (double)sum / iters / 1000.0, rtt[(uint64_t)iters * 99 / 100] / 1000.0);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server")) {
		server(atoi(argv[2]));
		return 0;
	}
	if (argc == 7 && !strcmp(argv[1], "client") && atoi(argv[6]) > 0) {
		client(argv[2], argv[3], (uint32_t)atoi(argv[4]), (uint32_t)atoi(argv[5]),
		       (uint32_t)atoi(argv[6]));
		return 0;
	}
	fprintf(stderr, "usage: %s server PORT | client HOST PORT REQ_BYTES RESP_BYTES ITERS\n", argv[0]);
	return 2;
}
