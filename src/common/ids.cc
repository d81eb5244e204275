#include "common/ids.h"

#include <ostream>

namespace magnetar {

std::ostream& operator<<(std::ostream& out, LedgerId id) { return out << id.value(); }
std::ostream& operator<<(std::ostream& out, EntryId id) { return out << id.value(); }

}  // namespace magnetar
