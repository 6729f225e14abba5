# shop-worker (examples/shop/worker): its pure parsers (no servers), its processors run in an
# in-process ferry worker against real PostgreSQL, Redis and shop-fakes (the seed's own
# tests: test_payments.c), and the shop-worker program itself end to end.
add_executable(shop_messages_test test_shop_messages.c)
target_link_libraries(shop_messages_test PRIVATE shop_messages PkgConfig::CMOCKA)
add_test(NAME shop.messages COMMAND shop_messages_test)
set_tests_properties(shop.messages PROPERTIES LABELS unit TIMEOUT 60)

# sp.h and sw.h include "th.h" by its bare name. The example libraries call ferry's public
# API without linking ferry (see examples/CMakeLists.txt) and come after ferry_internal on
# the link line: a rescanned group lets the linker resolve them from it.
shop_c_test(payments test_payments.c shop_processors
  "$<LINK_GROUP:RESCAN,ferry_internal,ex_common>")
target_include_directories(shop_payments PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)
add_dependencies(shop_payments shop-fakes)

shop_c_test(worker test_shop_worker.c shop_processors
  "$<LINK_GROUP:RESCAN,ferry_internal,ex_common>")
target_include_directories(shop_worker PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)
add_dependencies(shop_worker shop-fakes shop-worker)
