/* SPDX-License-Identifier: MIT */
/* `scontrol show node -o` lines (as slurmctld 22.05 prints them) and
 * node state words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "nodeforge.h"

static const char drained[] =
	"NodeName=cpu-01 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 "
	"CPUTot=1 CPULoad=1.22 AvailableFeatures=(null) ActiveFeatures=(null) "
	"Gres=(null) NodeAddr=127.0.0.1 NodeHostName=localhost Version=22.05.8 "
	"OS=Linux 6.18.44-fc-v1272 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=100 "
	"AllocMem=0 FreeMem=23411 Sockets=1 Boards=1 State=IDLE+DRAIN "
	"ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=p  "
	"BootTime=2026-12-04T14:59:11 SlurmdStartTime=2026-12-05T07:52:58 "
	"LastBusyTime=2026-12-05T07:52:49 CfgTRES=cpu=1,mem=100M,billing=1 "
	"AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s "
	"ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=nodeforge reimage failed: "
	"gpu.count: expected 8, seen 0 x=y [root@2026-12-05T07:52:57]\n";

static void test_parse_drained(void **state)
{
	struct nf_slurm_node n;
	struct tm tm = { .tm_year = 126, .tm_mon = 11, .tm_mday = 5,
			 .tm_hour = 7, .tm_min = 52, .tm_sec = 58 };

	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	assert_int_equal(nf_slurm_node_parse(drained, strlen(drained), &n), 0);
	assert_string_equal(n.name, "cpu-01");
	assert_string_equal(n.state, "IDLE+DRAIN");
	/* Reason runs to the end of the line, '=' and spaces included */
	assert_string_equal(n.reason, "nodeforge reimage failed: gpu.count: "
			    "expected 8, seen 0 x=y [root@2026-12-05T07:52:57]");
	assert_int_equal(n.slurmd_start, (long long)timegm(&tm));
}

static void test_parse_bad(void **state)
{
	struct nf_slurm_node n;
	const char *none = "Node cpu-01 not found\n";
	const char *nostate = "NodeName=cpu-01 Arch=x86_64\n";
	char *big = malloc(NF_SLURM_LINE_MAX + 2);

	(void)state;
	assert_int_equal(nf_slurm_node_parse(none, strlen(none), &n), NF_E_PARSE);
	assert_int_equal(nf_slurm_node_parse(nostate, strlen(nostate), &n),
			 NF_E_PARSE);
	assert_int_equal(nf_slurm_node_parse("", 0, &n), NF_E_PARSE);
	assert_non_null(big);
	memset(big, 'a', NF_SLURM_LINE_MAX + 1);
	assert_int_equal(nf_slurm_node_parse(big, NF_SLURM_LINE_MAX + 1, &n),
			 NF_E_LIMIT);
	free(big);
	/* a NUL inside a value is refused, not cut short */
	assert_int_equal(nf_slurm_node_parse("NodeName=a\0b State=IDLE", 24, &n),
			 NF_E_PARSE);
	/* an unknown start time is 0, not an error */
	assert_int_equal(nf_slurm_node_parse("NodeName=a State=DOWN "
					     "SlurmdStartTime=None", 42, &n), 0);
	assert_int_equal(n.slurmd_start, 0);
}

static void test_state_words(void **state)
{
	(void)state;
	assert_true(nf_slurm_state_has("IDLE+DRAIN", "DRAIN"));
	assert_true(nf_slurm_state_has("IDLE+DRAIN", "IDLE"));
	assert_true(nf_slurm_state_has("IDLE*+DRAIN", "IDLE"));
	assert_true(nf_slurm_state_has("MIXED+DRAIN+NOT_RESPONDING",
				       "NOT_RESPONDING"));
	/* DRAINING is not DRAIN: a word is matched whole */
	assert_false(nf_slurm_state_has("MIXED+DRAINING", "DRAIN"));
	assert_false(nf_slurm_state_has("ALLOCATED+DRAIN", "IDLE"));
	assert_false(nf_slurm_state_has("", "IDLE"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_drained),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_state_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
