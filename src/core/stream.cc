#include "core/stream.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "core/debug.h"

struct precclStream {
  uint32_t magic = 0x4d525453;  // "STRM"
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<precclResult_t()>> queue;
  int running = 0;
  bool stop = false;
  precclResult_t err = precclSuccess;
  std::string errText;
  std::thread worker;

  void loop() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;
      auto work = std::move(queue.front());
      queue.pop_front();
      running = 1;
      lock.unlock();
      precclResult_t r = work();
      std::string text = r != precclSuccess ? preccl::lastErrorText(nullptr) : "";
      lock.lock();
      running = 0;
      if (r != precclSuccess && err == precclSuccess) {
        err = r;
        errText = text;
      }
      cv.notify_all();
    }
  }
};

namespace preccl {

static bool validStream(precclStream_t s) { return s && s->magic == 0x4d525453; }

precclResult_t streamEnqueue(precclStream_t s, std::function<precclResult_t()> work) {
  if (!validStream(s)) return PRECCL_ERR(nullptr, precclInvalidArgument, "invalid stream");
  std::lock_guard<std::mutex> lock(s->mu);
  s->queue.push_back(std::move(work));
  s->cv.notify_all();
  return precclSuccess;
}

}  // namespace preccl

using preccl::validStream;

extern "C" {

precclResult_t precclStreamCreate(precclStream_t* stream) {
  if (!stream) return PRECCL_ERR(nullptr, precclInvalidArgument, "StreamCreate: stream is NULL");
  auto* s = new precclStream();
  s->worker = std::thread([s] { s->loop(); });
  *stream = s;
  return precclSuccess;
}

precclResult_t precclStreamSynchronize(precclStream_t s) {
  if (!s) return precclSuccess;  // the NULL stream has nothing pending
  if (!validStream(s)) return PRECCL_ERR(nullptr, precclInvalidArgument, "StreamSynchronize: invalid stream");
  std::unique_lock<std::mutex> lock(s->mu);
  s->cv.wait(lock, [&] { return s->queue.empty() && !s->running; });
  if (s->err != precclSuccess) return preccl::setError(nullptr, s->err, s->errText);
  return precclSuccess;
}

precclResult_t precclStreamQuery(precclStream_t s) {
  if (!s) return precclSuccess;
  if (!validStream(s)) return PRECCL_ERR(nullptr, precclInvalidArgument, "StreamQuery: invalid stream");
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->err != precclSuccess) return preccl::setError(nullptr, s->err, s->errText);
  return s->queue.empty() && !s->running ? precclSuccess : precclInProgress;
}

precclResult_t precclStreamDestroy(precclStream_t s) {
  if (!s) return precclSuccess;
  if (!validStream(s)) return PRECCL_ERR(nullptr, precclInvalidArgument, "StreamDestroy: invalid stream");
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stop = true;
    s->cv.notify_all();
  }
  s->worker.join();  // pending work finishes first, as cudaStreamDestroy lets it
  s->magic = 0;
  delete s;
  return precclSuccess;
}

}  // extern "C"
