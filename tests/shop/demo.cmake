# The demo's chaos run, smaller (200 orders): scripts/demo.sh starts its own private servers,
# kills shop-workers with SIGKILL while orders flow and faults are on, and must end with a
# clean reconciliation. tests/shop/chaos.sh checks its exit status and its report.
add_test(NAME shop.chaos COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/chaos.sh ${CMAKE_BINARY_DIR})
set_tests_properties(shop.chaos PROPERTIES LABELS integration TIMEOUT 600
  ENVIRONMENT "DEMO_ORDERS=200;DEMO_TASKS=20;DEMO_KILL_EVERY=2;DEMO_CLIENTS=8;DEMO_RELAY_CRASH=0.3")
