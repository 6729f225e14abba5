# pure_sources.cmake - the parser and encoder sources that do no I/O (CONVENTIONS.md: they
# are unit-tested and fuzzed alone). The fuzz build compiles exactly this list, instrumented,
# into one library its targets link (tests/fuzz/CMakeLists.txt). It is checked at every
# configure, fuzzing or not, so moving or renaming one of these files breaks the ordinary
# build at once instead of the fuzz build someone runs weeks later: update the list here.
set(FERRY_PURE_SOURCES
    src/contract/format.c
    src/contract/schema.c
    src/contract/validate.c
    src/deadletter/filter.c
    src/deadletter/params.c
    src/deadletter/redrive_opts.c
    src/envelope/decode.c
    src/envelope/envelope.c
    src/envelope/trace.c
    src/outbox/routes.c
    src/pg/text_array.c
    src/queue/job_opts.c
    src/queue/job_opts_stored.c
    src/redis/options.c
    src/redis/url.c
    src/sched/cron.c
    src/sched/tz.c
    src/util/civil.c
    src/util/clock.c
    src/util/error.c
    src/util/httpdate.c
    src/util/json_text.c
    src/util/nearest_name.c
    src/util/numtext.c
    src/util/printable.c
    src/util/utf8.c
    src/util/uuid_text.c
    src/worker/http_classify.c
    cmd/ferry/bulk_line.c
    cmd/ferry/timetext.c)
list(TRANSFORM FERRY_PURE_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/)
foreach(f IN LISTS FERRY_PURE_SOURCES)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "cmake/pure_sources.cmake lists ${f}, which does not exist: a pure "
                        "parser source moved or was renamed; update the list (the fuzz targets "
                        "build from it)")
  endif()
endforeach()
