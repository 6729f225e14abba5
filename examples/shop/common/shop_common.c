/* shop_common.c - the shop's schema check. */
#include "shop_common.h"

#include "ex_util.h"

int shop_schema_ensure(PGconn *c, const char *schema, char *err, size_t cap) {
    return ex_schema_ensure(c, schema, "shop", shop_sql_text, err, cap);
}
