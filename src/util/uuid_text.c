/* uuid_text.c - the one check of a UUID's text form (util/uuid7.h), pure, apart from the
 * generator's state so that parsers (the envelope decoder, contracts' format "uuid") and
 * their fuzz targets can use it. */
#include "ferry/outbox.h" /* FERRY_UUID_STRLEN */
#include "util/uuid7.h"

int ferry__uuid_text_valid(const char *s, size_t len) {
    if (!s || len != FERRY_UUID_STRLEN) return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return 0;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
            return 0;
        }
    }
    return 1;
}
