/* test_printable.c - ferryx_printable (src/util/printable.c): text from outside made safe
 * for one line of output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/printable.h"

static void expect(const char *in, const char *want) {
    char out[256];
    const char *got = ferryx_printable(in, out, sizeof out);
    assert_ptr_equal(got, out);
    if (strcmp(got, want) != 0) fail_msg("printable(\"%s\") = \"%s\", want \"%s\"", in, got, want);
}

static void test_ascii_and_controls(void **state) {
    (void)state;
    expect("", "");
    expect("plain text 123", "plain text 123");
    expect("a\\b", "a\\\\b");
    expect("l1\nl2\r\t", "l1\\nl2\\r\\t");
    expect("\x1b[2J", "\\x1b[2J");
    expect("\x01\x7f", "\\x01\\x7f");
}

static void test_valid_utf8_kept(void **state) {
    (void)state;
    expect("caf\xc3\xa9", "caf\xc3\xa9");                 /* U+00E9 */
    expect("\xe2\x82\xac", "\xe2\x82\xac");               /* U+20AC */
    expect("\xed\x9f\xbf", "\xed\x9f\xbf");               /* U+D7FF, below the surrogates */
    expect("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");       /* U+1F600 */
    expect("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");       /* U+10FFFF */
    expect("\xc2\x85 \xc2\x9f", "\\u0085 \\u009f");       /* C1 controls (NEL) */
    expect("\xc2\xa0", "\xc2\xa0");                       /* U+00A0 is not C1 */
}

/* Every byte that is not part of a valid shortest-form sequence comes out as \xNN. */
static void test_invalid_utf8_escaped(void **state) {
    (void)state;
    expect("\xe0\x80\x8a", "\\xe0\\x80\\x8a");           /* overlong newline */
    expect("\xc0\x8a", "\\xc0\\x8a");                   /* overlong newline, 2 bytes */
    expect("\xf0\x80\x80\x8a", "\\xf0\\x80\\x80\\x8a");   /* overlong newline, 4 bytes */
    expect("\xed\xa0\x80", "\\xed\\xa0\\x80");           /* surrogate U+D800 */
    expect("\xed\xbf\xbf", "\\xed\\xbf\\xbf");           /* surrogate U+DFFF */
    expect("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");   /* U+110000 */
    expect("\xf5\x80\x80\x80", "\\xf5\\x80\\x80\\x80");   /* no such lead byte */
    expect("\x80x", "\\x80x");                           /* stray continuation */
    expect("\xe2\x82", "\\xe2\\x82");                    /* truncated at the end */
    expect("\xe2\x82x", "\\xe2\\x82x");                  /* truncated before ASCII */
    expect("\xff\xfe", "\\xff\\xfe");
}

/* Cut with "..." at a whole escape or sequence, never beyond cap. */
static void test_cut(void **state) {
    (void)state;
    char out[8];
    assert_string_equal(ferryx_printable("abcdefghij", out, sizeof out), "abcd...");
    assert_string_equal(ferryx_printable("ab\ncd", out, sizeof out), "ab\\n...");
    assert_string_equal(ferryx_printable("abc\ncd", out, sizeof out), "abc...");
    assert_string_equal(ferryx_printable("ab\xe2\x82\xac", out, sizeof out), "ab...");
    assert_string_equal(ferryx_printable("abc", out, sizeof out), "abc");
}

static void test_clean(void **state) {
    (void)state;
    assert_int_equal(ferryx_printable_clean(""), 1);
    assert_int_equal(ferryx_printable_clean("{\"a\":\"x\\ny \xc3\xa9\"}"), 1);
    assert_int_equal(ferryx_printable_clean("a\nb"), 0);
    assert_int_equal(ferryx_printable_clean("\x1b[31m"), 0);
    assert_int_equal(ferryx_printable_clean("\"\xc2\x9b" "2J\""), 0); /* C1 CSI */
    assert_int_equal(ferryx_printable_clean("\xe0\x80\x8a"), 0);
    assert_int_equal(ferryx_printable_clean("\xed\xa0\x80"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ascii_and_controls),
        cmocka_unit_test(test_valid_utf8_kept),
        cmocka_unit_test(test_invalid_utf8_escaped),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
