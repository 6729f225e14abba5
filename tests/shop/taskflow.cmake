# taskflow (examples/taskflow): its pure codecs alone (unit), and the whole system against the
# servers fixture: ferry migrate, shop-fakes (the mailer), taskflow-api and taskflow-worker.
add_executable(shop_taskflow_parse test_taskflow_parse.c)
target_link_libraries(shop_taskflow_parse PRIVATE ferry_testsupport taskflow_common ferry_testsupport)
add_test(NAME shop.taskflow_parse COMMAND shop_taskflow_parse)
set_tests_properties(shop.taskflow_parse PROPERTIES LABELS unit
  ENVIRONMENT "FERRY_SOURCE_DIR=${CMAKE_SOURCE_DIR}")

shop_c_test(taskflow test_taskflow.c taskflow_common ferry_testsupport)
target_include_directories(shop_taskflow PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)
# the programs the test starts
add_dependencies(shop_taskflow taskflow-api taskflow-worker shop-fakes ferry_cli)
