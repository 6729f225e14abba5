/* ferry/ferry.h - umbrella header: reliable background jobs for C. Includes every public
 * header; ferry/common.h states the rules they all follow (return convention, contract
 * comments, diagnostics, stability). */
#ifndef FERRY_H
#define FERRY_H
#include "common.h"
#include "redis.h"
#include "queue.h"
#include "worker.h"
#include "http_classify.h"
#include "scheduler.h"
#include "outbox.h"
#include "contract.h"
#include "inbox.h"
#include "deadletter.h"
#include "trace.h"
#include "metrics.h"
#include "admin.h"
#endif
