#include "core/common/resource_budget.h"

#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <unistd.h>

#include "core/common/error.h"

namespace triescope {

namespace {
std::string gib(double bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << bytes / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return os.str();
}
}  // namespace

int64_t resource_budget_bytes() {
  if (const char* env = std::getenv(kMemoryBudgetEnv); env != nullptr && *env != '\0') {
    const std::string v = env;
    size_t used = 0;
    long long x = -1;
    try {
      x = std::stoll(v, &used);
    } catch (const std::exception&) {
      x = -1;
    }
    int shift = 0;
    if (used + 1 == v.size()) {
      const char u = v.back();
      shift = u == 'K' || u == 'k' ? 10 : u == 'M' || u == 'm' ? 20 : u == 'G' || u == 'g' ? 30 : u == 'T' || u == 't' ? 40 : -1;
      ++used;
    }
    TS_CHECK(x > 0 && used == v.size() && shift >= 0 && x <= (INT64_MAX >> shift),
             kMemoryBudgetEnv << "=" << v << ": must be a positive number of bytes, optionally with K, M, G or T");
    return static_cast<int64_t>(x) << shift;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return int64_t{8} << 30;  // unknown: 8 GiB
  return static_cast<int64_t>(pages) * page / 2;
}

void resource_budget_check(const std::string& where, const std::string& what, double bytes) {
  const int64_t budget = resource_budget_bytes();
  TS_CHECK(bytes <= static_cast<double>(budget),
           where << ": " << what << " needs " << std::setprecision(17) << bytes << " bytes (" << gib(bytes) << "), more than the memory budget of "
                 << budget << " bytes (" << gib(static_cast<double>(budget)) << "; " << kMemoryBudgetEnv
                 << "=BYTES changes it, the default is half the machine's memory)");
}

}  // namespace triescope
