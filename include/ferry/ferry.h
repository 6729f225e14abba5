/* ferry/ferry.h - umbrella header: reliable background jobs for C. */
#ifndef FERRY_H
#define FERRY_H
#include "common.h"
#include "redis.h"
#include "queue.h"
#include "worker.h"
#include "http_classify.h"
#include "scheduler.h"
#include "outbox.h"
#endif
