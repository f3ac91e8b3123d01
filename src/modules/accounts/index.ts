// The accounts module's public entry: what other modules (admin, device codes) may use.
export { createCompanyWithKey, createKeyWithRole, createUser, findCompany, listCompanies, resetAll, setCompanyStatus, type CompanyStatus } from './service.js';
