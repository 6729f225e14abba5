# The examples' HTTP layer at its edges (examples/common), through shop-api and shop-fakes.
shop_c_test(http_edges test_http_edges.c shop_common)
add_dependencies(shop_http_edges shop-api shop-fakes ferry_cli)
