# shop-api: its body parser alone (unit: no servers), then the program itself against the
# servers fixture and shop-fakes (integration).
add_executable(shop_api_parse test_api_parse.c)
target_link_libraries(shop_api_parse PRIVATE shop_order_parse PkgConfig::CMOCKA)
add_test(NAME shop.api_parse COMMAND shop_api_parse)
set_tests_properties(shop.api_parse PROPERTIES LABELS unit TIMEOUT 120)

foreach(stem api api_errors)
  shop_c_test(${stem} test_${stem}.c shop_common)
  target_include_directories(shop_${stem} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
    ${CMAKE_SOURCE_DIR}/tests/support)
  # the programs the test starts
  add_dependencies(shop_${stem} shop-api shop-fakes ferry_cli)
endforeach()
