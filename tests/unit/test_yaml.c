/* SPDX-License-Identifier: MIT */
/* YAML written for people (nf_yaml_write) reads back as the same document. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static char *write_yaml(const json_t *doc)
{
	struct nf_ctx *ctx;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	assert_non_null(fp);
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(nf_yaml_write(ctx, doc, fp), 0);
	fclose(fp);
	nf_ctx_free(ctx);
	return buf;
}

/* Block YAML; strings that would read as something else quoted */
static void test_yaml_text(void **state)
{
	json_t *doc = json_pack("{s:s,s:i,s:[s,s],s:{s:b,s:n},s:s,s:s,s:{},s:[]}",
				"name", "login", "port", 6817, "list", "a", "0400",
				"map", "on", 1, "off", "x", "key: value", "y",
				"*star", "empty", "none");
	char *text;

	(void)state;
	text = write_yaml(doc);
	assert_string_equal(text,
		"name: login\n"
		"port: 6817\n"
		"list:\n"
		"- a\n"
		"- \"0400\"\n"
		"map:\n"
		"  \"on\": true\n"
		"  \"off\": null\n"
		"x: 'key: value'\n"
		"\"y\": '*star'\n"
		"empty: {}\n"
		"none: []\n");
	free(text);
	json_decref(doc);
}

/* Whatever the strings, the YAML reads back as the document */
static void test_yaml_round_trip(void **state)
{
	static const char *const strs[] = {
		"", " ", " lead", "trail ", "a: b", "*star", "&anchor", "!tag",
		"- dash", "-", "? q", "# hash", "x #y", "@at", "`tick", "|pipe",
		">fold", "%pct", "{brace", "[bracket", "'single", "\"double",
		"two\nlines", "tab\there", "ünïcode", "yes", "No", "ON", "off",
		"y", "n", "true", "False", "null", "NULL", "~", "0", "0400", "-1",
		"+1", "1.5", ".5", "1e3", "0x1f", "10.0.0.1", "6.1.0-stub",
		"plain words", "back\\slash", "colon:nospace", "end:",
	};
	struct nf_ctx *ctx;
	json_t *doc = json_object(), *arr = json_array(), *back = NULL;
	char *text;

	(void)state;
	for (size_t i = 0; i < NF_ARRAY_SIZE(strs); i++) {
		json_array_append_new(arr, json_string(strs[i]));
		json_object_set_new(doc, strs[i][0] ? strs[i] : "empty-key",
				    json_string(strs[i]));
	}
	json_object_set_new(doc, "list", arr);
	json_object_set_new(doc, "numbers", json_pack("[i,i,f,f,b,b,n]", 0, -7,
							  1.5, 100.0, 1, 0));
	json_object_set_new(doc, "nested", json_pack("{s:{s:[{s:s}]}}", "a", "b",
						     "c", "d"));
	json_object_set_new(doc, "empty_map", json_object());
	json_object_set_new(doc, "empty_list", json_array());
	text = write_yaml(doc);
	assert_int_equal(nf_ctx_new(&ctx), 0);
	if (nf_yaml_load_buf(ctx, "test", text, strlen(text), &back, NULL, NULL))
		fail_msg("does not load: %s\n%s", nf_errmsg(ctx), text);
	if (!json_equal(doc, back)) {
		char *a = json_dumps(doc, JSON_COMPACT), *b = json_dumps(back, JSON_COMPACT);

		fail_msg("differs:\n%s\n%s\n%s", text, a, b);
	}
	json_decref(back);
	json_decref(doc);
	free(text);
	nf_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_text),
		cmocka_unit_test(test_yaml_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
